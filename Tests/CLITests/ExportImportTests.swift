import Foundation
import Testing
@testable import CLI
import SQLite
import Wire

@Suite("Export and import")
struct ExportImportTests {
    /// Two nodes that wrote concurrently (the same paths included).
    func twoNodes() -> (CLIHarness, CLIHarness) {
        let a = CLIHarness(), b = CLIHarness()
        a.run("init", "--name", "Alice Smith")
        b.run("init", "--name", "Bob Jones")
        for (cli, who) in [(a, "alice"), (b, "bob")] {
            cli.run("set", "/shared/title", "\"\(who)'s title\"")
            cli.run("set", "/shared/\(who)", #"{"x":1,"y":[1,2,3]}"#)
            cli.run("update", "/shared", "{\"count\":\(who.count),\"note\":\"by \(who)\"}")
            cli.run("send", "general", "hello from \(who)")
            cli.run("delete", "/shared/\(who)/x")
        }
        b.now += 5  // Bob's clock runs a little ahead: his writes win the shared paths.
        b.run("set", "/shared/title", "\"final\"")
        return (a, b)
    }

    @Test("each export imported into the other, in either order, gives identical trees", arguments: [false, true])
    func convergence(aFirst: Bool) {
        let (a, b) = twoNodes()
        let exportA = a.run("export").out
        let exportB = b.run("export").out
        if aFirst {
            b.input = exportA; #expect(b.run("import").status == 0)
            a.input = exportB; #expect(a.run("import").status == 0)
        } else {
            a.input = exportB; #expect(a.run("import").status == 0)
            b.input = exportA; #expect(b.run("import").status == 0)
        }
        let treeA = a.run("get", "/").line
        #expect(treeA == b.run("get", "/").line)
        #expect(treeA.contains(#""title":"final""#))
        #expect(a.run("messages", "general").text.split(separator: "\n").count == 2)
        // Importing again adds nothing.
        a.input = exportB
        #expect(a.run("import").err.contains("imported 0 new records"))
    }

    @Test("a flipped bit refuses that record only; the store stays sound")
    func flippedBit() throws {
        let (a, b) = twoNodes()
        var stream = b.run("export").out
        // Flip one bit inside the third record's bytes.
        var offset = 16
        for _ in 0..<2 { offset += 4 + stream[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) } }
        stream[offset + 4 + 40] ^= 0x04
        a.input = stream
        let result = a.run("import")
        #expect(result.status == 1)
        #expect(result.err.contains("record #3 refused:"))
        #expect(result.err.contains("imported 6 new records"))
        let db = try Connection(path: a.directory + "/store.sqlite")
        #expect(try db.integrityCheck() == ["ok"])
    }

    @Test("a damaged stream is refused whole and changes nothing")
    func damagedStream() {
        let (a, b) = twoNodes()
        let before = a.run("get", "/").line
        let stream = b.run("export").out
        for damaged in [Array(stream.dropLast(3)), Array("not a stream".utf8), Array(stream) + [0]] {
            a.input = damaged
            let result = a.run("import")
            #expect(result.status == 1 && result.err.contains("nothing imported"))
        }
        #expect(a.run("get", "/").line == before)
    }

    @Test("a stream of more records than one batch, from a file or from standard input, imports the same; nothing is left behind")
    func fileAndStandardInput() throws {
        let (a, b) = twoNodes()
        // B's records, each 150 times: more than one batch of 1,000, with duplicates across batches.
        let export = b.run("export").out
        var frames = [ArraySlice<UInt8>]()
        var offset = 16
        while true {
            let length = export[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) }
            if length == 0 { break }
            frames.append(export[offset..<offset + 4 + length])
            offset += 4 + length
        }
        var stream = Array(export.prefix(16))
        for _ in 0..<150 { for frame in frames { stream += frame } }
        let count = UInt64(150 * frames.count)
        stream += [0, 0, 0, 0] + (0..<8).reversed().map { UInt8(truncatingIfNeeded: count >> (8 * UInt64($0))) }
        #expect(frames.count == 7)

        let file = a.directory + "-records.lcx"
        defer { try? FileManager.default.removeItem(atPath: file) }
        try Data(stream).write(to: URL(fileURLWithPath: file))
        let fromFile = a.run("import", file)
        #expect(fromFile.status == 0)
        #expect(fromFile.err.contains("imported 7 new records, 1043 already held, 0 refused"))
        let c = CLIHarness()
        c.run("init", "--name", "Carol")
        c.input = stream
        #expect(c.run("import", "-").status == 0)
        #expect(a.run("get", "/shared/title").line == #""final""#)  // Bob's later write, imported
        #expect(c.run("get", "/shared").line == b.run("get", "/shared").line)
        // The copy of standard input is gone, after a success and after a refusal.
        c.input = Array(stream.dropLast(1))
        #expect(c.run("import").err.contains("nothing imported"))
        let left = try FileManager.default.contentsOfDirectory(atPath: c.directory).filter { $0.hasSuffix(".partial") }
        #expect(left.isEmpty)
        // A damaged file is refused whole as well.
        try Data(stream.dropLast(1)).write(to: URL(fileURLWithPath: file))
        let refused = a.run("import", file)
        #expect(refused.status == 1 && refused.err.contains("nothing imported"))
    }

    @Test("large writes travel with their chunks (format version 2) and show on the importing node; a newer version is refused clearly")
    func largeWrites() throws {
        let a = CLIHarness(), c = CLIHarness()
        a.run("init", "--name", "Alice Smith")
        c.run("init", "--name", "Carol")
        // 1,500 children: more than one record holds, so a large write.
        let children = (0..<1_500).map { "\"k\(String(format: "%04d", $0))\":{\"n\":\($0),\"t\":\"\(String(repeating: "x", count: 200))\"}" }
        #expect(a.run("update", "/big", "{" + children.joined(separator: ",") + "}").status == 0)
        a.run("set", "/small", "1")
        let export = a.run("export")
        let stream = export.out
        #expect(Array(stream.prefix(16)) == Wire.ExportStream.magicWithChunks)
        #expect(Array(stream.prefix(16)) != Wire.ExportStream.magic, "a reader of version 1 refuses it at its header")
        #expect(export.err.contains("chunks of large writes"))
        let sections = try Wire.ExportStream.sections(stream)
        #expect((sections.chunks?.count ?? 0) >= 5)

        // A stream cut inside its chunks is refused whole: not even the records are stored.
        c.input = Array(stream.dropLast(20))
        #expect(c.run("import").err.contains("nothing imported"))
        #expect(c.run("get", "/small").line == "null")

        // With a chunk nothing names added, the write shows whole and the stray chunk is not kept.
        let stray: [UInt8] = Array(repeating: 7, count: 4096)
        c.input = Wire.ExportStream.encode(sections.records.map { Array($0) }, chunks: sections.chunks!.map { Array($0) } + [stray])
        let imported = c.run("import")
        #expect(imported.status == 0)
        #expect(imported.err.contains("\(sections.chunks!.count + 1) read, \(sections.chunks!.count) new, 1 large writes complete"))
        #expect(c.run("get", "/big").line == a.run("get", "/big").line)
        #expect(c.run("get", "/big/k1499/n").line == "1499")

        // A store without large writes still exports version 1, which older nodes read.
        #expect(Array(c.run("export").out.prefix(16)) == Wire.ExportStream.magicWithChunks)
        let d = CLIHarness()
        d.run("init", "--name", "Dan")
        d.run("set", "/x", "1")
        #expect(Array(d.run("export").out.prefix(16)) == Wire.ExportStream.magic)

        // A version this reader does not know: refused whole, naming the version.
        var newer = stream
        newer[15] = 3
        d.input = newer
        let refused = d.run("import")
        #expect(refused.status == 1)
        #expect(refused.err.contains("format version 3"))
    }
}
