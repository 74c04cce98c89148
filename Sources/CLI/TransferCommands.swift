import Foundation
import Store
import Wire

/// `export` and `import`: records as a file, for sneakernet sync and for comparing nodes.
enum TransferCommands {
    static let all = [export, `import`]

    /// Records are verified and stored in batches of this many, each batch one transaction.
    static let batchSize = 1_000

    static let export = Command(spec: CommandSpec(
        name: "export",
        abstract: "Write every record to standard output as an export stream.",
        discussion: "The stream format is specified in Protocol.md; 'lanchat import' reads it."
    )) { context in
        guard !context.console.outputIsTerminal else {
            throw CommandFailure("the export stream is binary; redirect it to a file, e.g. lanchat export > records.lcx")
        }
        let node = try context.openNode()
        context.console.writeOut(ArraySlice(ExportStream.header()))
        var count = 0
        var buffer = [UInt8]()
        try node.store.forEachRecord { bytes in
            buffer += ExportStream.frame(bytes)
            count += 1
            if buffer.count >= 1 << 20 {
                context.console.writeOut(buffer[...])
                buffer.removeAll(keepingCapacity: true)
            }
        }
        context.console.writeOut(ArraySlice(buffer + ExportStream.trailer(count: count)))
        context.console.printError("exported \(count) records")
    }

    static let `import` = Command(spec: CommandSpec(
        name: "import",
        writes: true,
        abstract: "Read an export stream, verify each record, and store the valid ones.",
        discussion: "Reads FILE, or standard input when FILE is absent or '-'. A damaged stream is refused whole; a record that fails verification is reported with its reason and the rest are stored (exit status 1 if any was refused).",
        arguments: [ArgumentSpec(name: "FILE", help: "The export stream to read.", optional: true)]
    )) { context in
        let node = try context.openNode()
        let input: [UInt8]
        if context.arguments.positionals.first.map({ $0 != "-" }) ?? false {
            let file = context.positional(0)
            guard let data = FileManager.default.contents(atPath: file) else { throw CommandFailure("cannot read \(file)") }
            input = Array(data)
        } else {
            input = try context.console.readInput()
        }
        let frames: [ArraySlice<UInt8>]
        do { frames = try ExportStream.frames(input) } catch { throw CommandFailure("\(error); nothing imported") }

        var added = 0, duplicates = 0, refused = 0
        var start = 0
        while start < frames.count {
            let end = min(start + batchSize, frames.count)
            var batch = [Wire.Record]()
            var positions = [Int]()
            for index in start..<end {
                do {
                    batch.append(try Wire.Record.decode(Array(frames[index])))
                    positions.append(index)
                } catch {
                    refused += 1
                    context.console.printError("record #\(index + 1) refused: \(error)")
                }
            }
            let report = try node.store.ingest(batch, nowMillis: context.console.nowMillis())
            added += report.added
            duplicates += report.duplicates
            for (index, reason) in report.refused {
                refused += 1
                context.console.printError("record #\(positions[index] + 1) refused: \(reason)")
            }
            start = end
        }
        context.console.printError("imported \(added) new records, \(duplicates) already held, \(refused) refused")
        if refused > 0 { throw CommandFailure("\(refused) of \(frames.count) records were refused") }
    }
}
