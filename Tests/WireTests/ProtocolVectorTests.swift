import Crypto
import Foundation
import Testing
import Tree
@testable import Wire

/// Checks the code against the hex vectors printed in Protocol.md, so the spec and the bytes
/// cannot drift apart. Each vector is a fenced block tagged `vector` of `key: value` lines.
@Suite("Protocol.md vectors")
struct ProtocolVectorTests {
    static func vectors() throws -> [[String: String]] {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../Protocol.md")
        let text = try String(contentsOf: url, encoding: .utf8)
        var result = [[String: String]]()
        var current: [String: String]?
        var lastKey = ""
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("```vector") { current = [:]; continue }
            if line.hasPrefix("```"), let block = current { result.append(block); current = nil; continue }
            guard current != nil else { continue }
            if line.hasPrefix("  ") {
                current![lastKey, default: ""] += line.trimmingCharacters(in: .whitespaces)
            } else if let colon = line.firstIndex(of: ":") {
                lastKey = String(line[..<colon])
                current![lastKey] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            }
        }
        return result
    }

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
