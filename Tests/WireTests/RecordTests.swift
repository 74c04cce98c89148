import Crypto
import Testing
import Tree
@testable import Wire

let alice = try! PrivateKey(seedBytes: [UInt8](repeating: 1, count: 32))

func write(_ pairs: [(String, JSONValue)], clock: UInt64 = 1 << 16) throws -> Record {
    try Record.make(body: .write(pairs.map { WritePair(path: try Path($0.0), value: $0.1) }), clock: clock, signer: alice)
}

@Suite("Records")
struct RecordTests {
    @Test("a record decodes to itself, with its id and a valid signature")
    func roundTrip() throws {
        let record = try write([("/a/b", ["x": 1, "y": "Nguyễn", "z": 0.5, "t": true]), ("/c", .null)])
        let decoded = try Record.decode(record.encoded)
        #expect(decoded == record)
        #expect(decoded.id == BLAKE2b.digest256(record.encoded))
        #expect(decoded.verifySignature())
    }

    @Test("every single-bit change is refused")
    func everyBitFlip() throws {
        let record = try write([("/m", ["text": "hi", "n": -3])])
        for i in 0..<(record.encoded.count * 8) {
            var bytes = record.encoded
            bytes[i / 8] ^= 1 << UInt8(i % 8)
            #expect(throws: RecordError.self, "bit \(i)") { try Record.decode(bytes) }
        }
    }

    @Test("invalid bodies are refused when made")
    func invalidBodies() throws {
        #expect(throws: RecordError.self) { try Record.make(body: .write([]), clock: 1, signer: alice) }
        #expect(throws: RecordError.self) { try write([("/b", 1), ("/a", 2)]) }
        #expect(throws: RecordError.self) { try write([("/a", 1), ("/a/b", 2)]) }
        #expect(throws: RecordError.self) { try write([("/a", 1), ("/a b", 2), ("/a/c", 2)]) }
        let huge = JSONValue.string(String(repeating: "x", count: RecordLimits.maxRecordBytes))
        #expect(throws: RecordError.self) { try write([("/a", huge)]) }
    }

    /// Re-signs hand-made CBOR so that only the rule under test is broken.
    func signed(version: UInt64 = 1, kind: UInt64 = 1, body: CBOR) throws -> [UInt8] {
        let unsigned = CBOR.array([.unsigned(version), .unsigned(kind), .bytes(alice.publicKey.bytes), .unsigned(5), body])
        let signature = try alice.sign(Record.signingDomain + unsigned.encoded())
        return CBOR.array([.unsigned(version), .unsigned(kind), .bytes(alice.publicKey.bytes), .unsigned(5), body, .bytes(signature.bytes)]).encoded()
    }

    func pair(_ path: String, _ value: CBOR) -> CBOR { .array([.text(path), value]) }

    @Test("each broken rule has its own error")
    func distinctErrors() throws {
        func error(_ bytes: [UInt8]) -> RecordError? {
            do { _ = try Record.decode(bytes); return nil } catch { return error }
        }
        let good = try signed(body: .array([pair("/a", .unsigned(1))]))
        #expect(error(good) == nil)
        #expect(error(try signed(version: 2, body: .array([pair("/a", .unsigned(1))]))) == .unsupportedVersion(2))
        #expect(error(try signed(kind: 9, body: .array([pair("/a", .unsigned(1))]))) == .unknownKind(9))
        #expect(error(good + [0]) == .malformed(.trailingBytes(offset: good.count)))
        if case .malformed(.truncated) = error(Array(good.dropLast())) {} else { Issue.record("truncated") }
        if case .invalidPath = error(try signed(body: .array([pair("/a.b", .unsigned(1))]))) {} else { Issue.record("bad path") }
        if case .invalidValue = error(try signed(body: .array([pair("/a", .float(2.0))]))) {} else { Issue.record("integral float") }
        if case .invalidValue = error(try signed(body: .array([pair("/a", .map([]))]))) {} else { Issue.record("empty map") }
        if case .invalidValue = error(try signed(body: .array([pair("/a", .map([CBORPair(.text("k"), .null)]))]))) {} else { Issue.record("null member") }
        if case .invalidValue = error(try signed(body: .array([pair("/a", .array([.unsigned(1)]))]))) {} else { Issue.record("array value") }
        if case .invalidValue = error(try signed(body: .array([pair("/a", .unsigned(1 << 60))]))) {} else { Issue.record("big integer") }
        if case .invalidBody = error(try signed(body: .array([pair("/b", .null), pair("/a", .null)]))) {} else { Issue.record("unordered") }
        if case .invalidBody = error(try signed(body: .array([]))) {} else { Issue.record("empty body") }
        var badSig = good
        badSig[badSig.count - 1] ^= 1
        #expect(error(badSig) == .badSignature)
        #expect(error([UInt8](repeating: 0x80, count: RecordLimits.maxRecordBytes + 1)) == .tooLarge(size: RecordLimits.maxRecordBytes + 1, limit: RecordLimits.maxRecordBytes))
    }

    @Test("a record decoded with the hash its receiver worked out is the same record, still verified")
    func decodeWithKnownHash() throws {
        let record = try write([("/m/x", ["text": "hi", "n": 2])])
        let id = BLAKE2b.digest256(record.encoded)
        #expect(try Record.decode(record.encoded, hashedAs: id) == record)
        var badSignature = record.encoded
        badSignature[badSignature.count - 1] ^= 1
        #expect(throws: RecordError.badSignature) { try Record.decode(badSignature, hashedAs: BLAKE2b.digest256(badSignature)) }
        var badBody = record.encoded
        badBody[badBody.count - RecordCodec.signatureItemBytes - 1] ^= 0xFF
        #expect(throws: RecordError.self) { try Record.decode(badBody, hashedAs: BLAKE2b.digest256(badBody)) }
    }

    @Test("a bad member of a value is reported at its own path, however deep")
    func valueErrorsNameTheMember() throws {
        func error(_ value: CBOR) throws -> RecordError? {
            let bytes = try signed(body: .array([pair("/a", value)]))
            do { _ = try Record.decode(bytes); return nil } catch { return error }
        }
        #expect(try error(.map([CBORPair(.text("k"), .null)])) == .invalidValue(path: "/a/k", reason: "null member inside an object"))
        let deep = CBOR.map([CBORPair(.text("b"), .map([CBORPair(.text("c"), .float(2.0))]))])
        #expect(try error(deep) == .invalidValue(path: "/a/b/c", reason: "integral number 2.0 must be a CBOR integer"))
        #expect(try error(.map([CBORPair(.text("x"), .bytes([1]))])) == .invalidValue(path: "/a/x", reason: "byte strings are not tree values"))
        if case .invalidValue(path: "/a", _)? = try error(.map([CBORPair(.text("$x"), .unsigned(1))])) {} else { Issue.record("bad key") }
        if case .invalidValue(path: "/a", _)? = try error(.map([CBORPair(.text("$x"), .map([CBORPair(.text("y"), .unsigned(1))]))])) {} else {
            Issue.record("bad key of an object")
        }
        let good = CBOR.map([CBORPair(.text("n"), .unsigned(1)), CBORPair(.text("o"), .map([CBORPair(.text("t"), .text("x"))]))])
        #expect(try error(good) == nil)
    }

    @Test("write order sorts by clock, then author, then id; its key sorts the same way")
    func writeOrder() throws {
        let a = try write([("/a", 1)], clock: 5)
        let b = try write([("/a", 2)], clock: 6)
        let c = try write([("/a", 3)], clock: 5)
        #expect(a.order < b.order && c.order < b.order)
        #expect((a.order < c.order) == (a.id < c.id))
        #expect((a.order < c.order) == a.order.key.lexicographicallyPrecedes(c.order.key))
        #expect(a.order.key.count == 72)
    }

    @Test("the export stream frames records and detects damage")
    func exportStream() throws {
        let records = try (0..<3).map { try write([("/n", .number(Double($0)))], clock: UInt64($0 + 1)).encoded }
        let stream = ExportStream.encode(records)
        #expect(try ExportStream.frames(stream).map(Array.init) == records)
        #expect(throws: ExportStream.StreamError.badMagic) { try ExportStream.frames(Array(stream.dropFirst())) }
        #expect(throws: ExportStream.StreamError.truncated(afterRecords: 3)) { try ExportStream.frames(Array(stream.dropLast(2))) }
        #expect(throws: ExportStream.StreamError.trailingBytes) { try ExportStream.frames(stream + [1]) }
        var lying = stream
        lying[lying.count - 1] = 9
        #expect(throws: ExportStream.StreamError.countMismatch(declared: 9, found: 3)) { try ExportStream.frames(lying) }
        #expect(try ExportStream.frames(ExportStream.encode([])).isEmpty)
    }

    /// The stream read in pieces of `size` bytes: its records, or the error it was refused with.
    static func readInPieces(_ stream: [UInt8], size: Int) -> Result<[[UInt8]], ExportStream.StreamError> {
        var reader = ExportStream.Reader()
        var records = [[UInt8]]()
        do {
            for start in stride(from: 0, to: stream.count, by: size) {
                records += try reader.feed(stream[start..<min(start + size, stream.count)]).map(Array.init)
            }
            try reader.finish()
            return .success(records)
        } catch {
            return .failure(error)
        }
    }

    @Test("the export stream read in pieces of any size gives the same records and the same refusals",
          arguments: [1, 3, 17, 300, 1 << 20])
    func exportStreamInPieces(size: Int) throws {
        let records = try (0..<5).map { try write([("/n", .number(Double($0)))], clock: UInt64($0 + 1)).encoded }
        let stream = ExportStream.encode(records)
        #expect(try Self.readInPieces(stream, size: size).get() == records)
        #expect(try Self.readInPieces(ExportStream.encode([]), size: size).get().isEmpty)
        var lying = stream
        lying[lying.count - 1] = 9
        var tooLarge = ExportStream.header() + [0xFF, 0xFF, 0xFF, 0xFF]
        tooLarge += [UInt8](repeating: 0, count: 64)
        let damaged: [([UInt8], ExportStream.StreamError)] = [
            (Array(stream.dropFirst()), .badMagic),
            (Array(stream.prefix(5)), .badMagic),
            (Array(stream.dropLast(2)), .truncated(afterRecords: 5)),
            (Array(stream.dropLast(13)), .truncated(afterRecords: 4)),
            (stream + [1], .trailingBytes),
            (lying, .countMismatch(declared: 9, found: 5)),
            (tooLarge, .frameTooLarge(index: 0, length: 0xFFFF_FFFF)),
        ]
        for (input, expected) in damaged {
            #expect(Self.readInPieces(input, size: size) == .failure(expected))
            // The whole-stream reader agrees.
            #expect(throws: expected) { try ExportStream.frames(input) }
        }
    }
}
