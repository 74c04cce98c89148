import Crypto
import Foundation
import Testing
import TestSupport
import Tree
@testable import Wire

/// Checks the code against the hex vectors printed in Protocol.md, so the spec and the bytes
/// cannot drift apart. Each vector is a fenced block tagged `vector` of `key: value` lines.
@Suite("Protocol.md vectors")
struct ProtocolVectorTests {
    static func vectors() throws -> [[String: String]] { try ProtocolVectors.all() }

    static func record(from vector: [String: String]) throws -> Record {
        let key = try PrivateKey(seedBytes: Hex.decode(vector["seed"]!)!)
        guard case let .array(items) = try JSONValue.parse(vector["pairs"]!) else { throw TreeError.invalidUpdate("pairs") }
        let pairs = try items.map { item -> WritePair in
            guard case let .array(pair) = item, case let .string(path) = pair[0] else { throw TreeError.invalidUpdate("pair") }
            let p = try Path(path)
            return WritePair(path: p, value: try pair[1].normalized(at: p))
        }
        return try Record.make(body: .write(pairs), clock: UInt64(vector["clock"]!)!, signer: key)
    }

    @Test("record vectors: encoding, id and signature")
    func records() throws {
        let vectors = try Self.vectors().filter { $0["kind"] == "record" }
        #expect(vectors.count >= 2)
        for vector in vectors {
            let record = try Self.record(from: vector)
            if ProcessInfo.processInfo.environment["LANCHAT_PRINT_VECTORS"] != nil {
                print("\(vector["name"]!)\nrecord: \(Hex.encode(record.encoded))\nid: \(record.id)\nuser: \(record.author.userID)")
            }
            #expect(Hex.encode(record.encoded) == vector["record"], "\(vector["name"]!)")
            #expect(record.id.description == vector["id"], "\(vector["name"]!)")
            guard let bytes = Hex.decode(vector["record"] ?? "") else { Issue.record("vector \(vector["name"]!) has no hex"); continue }
            #expect(try Record.decode(bytes) == record)
        }
    }

    @Test("manifest and file entry vectors")
    func blobRecords() throws {
        let all = try Self.vectors()
        guard let m = all.first(where: { $0["kind"] == "manifest-record" }), let f = all.first(where: { $0["kind"] == "file-record" }) else {
            Issue.record("no manifest/file vectors")
            return
        }
        let key = try PrivateKey(seedBytes: Hex.decode(m["seed"]!)!)
        let content = Hex.decode(m["content"]!)!
        let chunkSize = Int(m["chunk-size"]!)!
        let chunks = stride(from: 0, to: content.count, by: chunkSize).map { BLAKE2b.digest256(content[$0..<min($0 + chunkSize, content.count)]) }
        let manifest = Manifest(blob: BLAKE2b.digest256(content), size: UInt64(content.count), contentType: m["type"]!,
                                chunkSize: UInt64(chunkSize), chunks: chunks)
        let manifestRecord = try Record.make(body: .manifest(manifest), clock: UInt64(m["clock"]!)!, signer: key)
        let fileRecord = try Record.make(body: .file(FileEntry(path: f["path"]!, manifest: manifestRecord.id)),
                                         clock: UInt64(f["clock"]!)!, signer: key)
        if ProcessInfo.processInfo.environment["LANCHAT_PRINT_VECTORS"] != nil {
            print("manifest.record: \(Hex.encode(manifestRecord.encoded))\nmanifest.id: \(manifestRecord.id)")
            print("file.record: \(Hex.encode(fileRecord.encoded))\nfile.id: \(fileRecord.id)")
        }
        #expect(Hex.encode(manifestRecord.encoded) == m["record"])
        #expect(manifestRecord.id.description == m["id"])
        #expect(Hex.encode(fileRecord.encoded) == f["record"])
        #expect(fileRecord.id.description == f["id"])
        if let bytes = Hex.decode(m["record"] ?? "") { #expect(try Record.decode(bytes) == manifestRecord) }
        if let bytes = Hex.decode(f["record"] ?? "") { #expect(try Record.decode(bytes) == fileRecord) }
    }

    @Test("large write vector: content, record, id, and the content read back pair by pair")
    func largeWrites() throws {
        let vectors = try Self.vectors().filter { $0["kind"] == "large-write-record" }
        #expect(!vectors.isEmpty)
        for vector in vectors {
            let key = try PrivateKey(seedBytes: Hex.decode(vector["seed"]!)!)
            guard case let .array(items) = try JSONValue.parse(vector["pairs"]!) else { throw TreeError.invalidUpdate("pairs") }
            let pairs = try items.map { item -> WritePair in
                guard case let .array(pair) = item, case let .string(path) = pair[0] else { throw TreeError.invalidUpdate("pair") }
                let p = try Path(path)
                return WritePair(path: p, value: try pair[1].normalized(at: p))
            }
            let content = LargeWriteContent.encode(pairs)
            let (write, _) = LargeWrite.describing(content, chunkSize: Int(vector["chunk-size"]!)!)
            let record = try Record.make(body: .largeWrite(write), clock: UInt64(vector["clock"]!)!, signer: key)
            if ProcessInfo.processInfo.environment["LANCHAT_PRINT_VECTORS"] != nil {
                print("content: \(Hex.encode(content))\nrecord: \(Hex.encode(record.encoded))\nid: \(record.id)")
            }
            #expect(Hex.encode(content) == vector["content"])
            #expect(Hex.encode(record.encoded) == vector["record"])
            #expect(record.id.description == vector["id"])
            if let bytes = Hex.decode(vector["record"] ?? "") { #expect(try Record.decode(bytes) == record) }
            var read = [WritePair]()
            try LargeWriteContent.forEachPair(in: content[...]) { pair, _ in read.append(pair) }
            #expect(read == pairs)
        }
    }

    @Test("export stream vector")
    func exportStream() throws {
        let all = try Self.vectors()
        let records = try all.filter { $0["kind"] == "record" }.map { try Self.record(from: $0).encoded }
        guard let stream = all.first(where: { $0["kind"] == "export" }) else { Issue.record("no export vector"); return }
        let encoded = ExportStream.encode(records)
        if ProcessInfo.processInfo.environment["LANCHAT_PRINT_VECTORS"] != nil { print("export: \(Hex.encode(encoded))") }
        #expect(Hex.encode(encoded) == stream["stream"])
    }
}
