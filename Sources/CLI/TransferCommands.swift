import Dispatch
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
        abstract: "Write every record, and the content of large writes, to standard output as an export stream.",
        discussion: "The stream format is specified in Protocol.md; 'lanchat import' reads it. A store holding large writes is exported in format version 2, with their chunks after the records; others in version 1, which older nodes read too."
    )) { context in
        guard !context.console.outputIsTerminal else {
            throw CommandFailure("the export stream is binary; redirect it to a file, e.g. lanchat export > records.lcx")
        }
        let node = try context.openNode()
        let withChunks = try node.store.hasLargeWrites
        context.console.writeOut(ArraySlice(ExportStream.header(withChunks: withChunks)))
        var count = 0
        var buffer = [UInt8]()
        func add(_ bytes: [UInt8]) {
            buffer += ExportStream.frame(bytes)
            count += 1
            if buffer.count >= 1 << 20 {
                context.console.writeOut(buffer[...])
                buffer.removeAll(keepingCapacity: true)
            }
        }
        try node.store.forEachRecord(add)
        buffer += ExportStream.trailer(count: count)
        let records = count
        count = 0
        if withChunks {
            try node.store.forEachLargeWriteChunk(add)
            buffer += ExportStream.trailer(count: count)
        }
        context.console.writeOut(buffer[...])
        context.console.printError(withChunks ? "exported \(records) records and \(count) chunks of large writes" : "exported \(records) records")
    }

    static let `import` = Command(spec: CommandSpec(
        name: "import",
        writes: true,
        abstract: "Read an export stream, verify each record, and store the valid ones.",
        discussion: "Reads FILE, or standard input when FILE is absent or '-'. A damaged stream is refused whole; a record that fails verification is reported with its reason and the rest are stored (exit status 1 if any was refused). The stream is read in pieces, twice (the framing first), so memory does not grow with its size; standard input is first copied to a temporary file in the data directory.",
        arguments: [ArgumentSpec(name: "FILE", help: "The export stream to read.", optional: true)]
    )) { context in
        let node = try context.openNode()
        let file = context.arguments.positionals.first.flatMap { $0 == "-" ? nil : $0 }
        let input: ImportInput
        do {
            input = try ImportInput.check(file: file, console: context.console, copyDirectory: node.directory.path)
        } catch let error as ExportStream.StreamError {
            throw CommandFailure("\(error); nothing imported")
        }
        defer { input.remove() }

        var added = 0, duplicates = 0, refused = 0, total = 0
        var reader = ExportStream.Reader()
        var frames = [ArraySlice<UInt8>]()
        // The batch being verified on other threads while the one before it is stored here.
        var verifying: (group: DispatchGroup, outcomes: BatchVerifier.Outcomes, first: Int)?

        func store(_ outcomes: BatchVerifier.Outcomes, first: Int) throws {
            var batch = [Wire.Record]()
            var positions = [Int]()
            for (offset, outcome) in outcomes.results.enumerated() {
                switch outcome! {
                case let .success(record):
                    batch.append(record)
                    positions.append(first + offset)
                case let .failure(error):
                    refused += 1
                    context.console.printError("record #\(first + offset + 1) refused: \(error)")
                }
            }
            let report = try node.store.ingest(batch, nowMillis: context.console.nowMillis())
            added += report.added
            duplicates += report.duplicates
            for (index, reason) in report.refused {
                refused += 1
                context.console.printError("record #\(positions[index] + 1) refused: \(reason)")
            }
        }
        func flush() throws {
            let next = frames.isEmpty ? nil : (BatchVerifier.start(frames), total)
            total += frames.count
            frames.removeAll(keepingCapacity: true)
            if let (group, outcomes, first) = verifying {
                group.wait()
                try store(outcomes, first: first)
            }
            verifying = next.map { ($0.0.0, $0.0.1, $0.1) }
        }

        // Chunks of large writes (version 2) follow every record: once the first arrives, every
        // record is stored, so the large writes they belong to are known. Kept a few MiB at a
        // time.
        var chunks = [ArraySlice<UInt8>](), chunkBytes = 0, chunksRead = 0, chunksKept = 0, applied = 0
        func storeChunks() throws {
            guard !chunks.isEmpty else { return }
            let outcome = try node.store.importLargeWriteChunks(chunks)
            chunksKept += outcome.kept
            applied += outcome.applied.count
            chunks.removeAll(keepingCapacity: true)
            chunkBytes = 0
        }
        try input.forEachPiece { piece in
            for frame in try reader.feed(piece) {
                frames.append(frame)
                if frames.count == batchSize { try flush() }
            }
            for chunk in reader.takeChunks() {
                if chunksRead == 0 {
                    try flush()
                    try flush()
                }
                chunksRead += 1
                chunks.append(chunk)
                chunkBytes += chunk.count
                if chunkBytes >= 16 << 20 { try storeChunks() }
            }
        }
        try reader.finish()  // checked on the first pass; the file did not change since
        try flush()
        try flush()
        try storeChunks()
        context.console.printError("imported \(added) new records, \(duplicates) already held, \(refused) refused")
        if chunksRead > 0 {
            context.console.printError("chunks of large writes: \(chunksRead) read, \(chunksKept) new, \(applied) large writes complete")
        }
        if refused > 0 { throw CommandFailure("\(refused) of \(total) records were refused") }
    }
}
