import Crypto
import Testing
import Tree
@testable import Wire

/// The record and datagram limits of Protocol.md §3.4 and §9, at the limit and one past it.
@Suite("Record and datagram limits")
struct RecordAndDatagramLimitTests {
    @Test("a record of exactly 1,048,576 bytes is made and decoded; one byte more is refused as too large")
    func recordSize() throws {
        let max = RecordLimits.maxRecordBytes
        #expect(max == 1_048_576)
        // A string of 65,536 bytes or more has a 5-byte head: the record grows byte for byte.
        func record(_ length: Int) throws -> Record {
            try write([("/big", .string(String(repeating: "x", count: length)))])
        }
        let probe = try record(100_000)
        let exact = try record(100_000 + max - probe.encoded.count)
        #expect(exact.encoded.count == max)
        #expect(try Record.decode(exact.encoded) == exact)
        // One byte more cannot be made, and signed by hand it is refused before anything is parsed.
        #expect(throws: RecordError.tooLarge(size: max + 1, limit: max)) { try record(100_001 + max - probe.encoded.count) }
        let unsigned = CBOR.array([.unsigned(1), .unsigned(1), .bytes(alice.publicKey.bytes), .unsigned(1 << 16),
                                   .array([.array([.text("/big"), .text(String(repeating: "x", count: 100_001 + max - probe.encoded.count))])])])
        let signature = try alice.sign(Record.signingDomain + unsigned.encoded())
        guard case let .array(fields) = unsigned else { return }
        let over = CBOR.array(fields + [.bytes(signature.bytes)]).encoded()
        #expect(over.count == max + 1)
        #expect(throws: RecordError.tooLarge(size: max + 1, limit: max)) { try Record.decode(over) }
    }

    @Test("a write of 1,000 pairs is made and decoded; 1,001 pairs are an invalid body")
    func pairsPerWrite() throws {
        let max = RecordLimits.maxPairs
        #expect(max == 1_000)
        func path(_ i: Int) -> String { "/p" + String(repeating: "0", count: 4 - String(i).count) + String(i) }
        func pairs(_ count: Int) -> [(String, JSONValue)] {
            (0..<count).map { (path($0), JSONValue.number(Double($0))) }
        }
        let full = try write(pairs(max))
        #expect(try Record.decode(full.encoded) == full)
        #expect {
            try write(pairs(max + 1))
        } throws: { error in
            if case .invalidBody = error as? RecordError { true } else { false }
        }
        // Signed by hand, so only the count is wrong.
        let body = CBOR.array((0...max).map { CBOR.array([.text(path($0)), .unsigned(UInt64($0))]) })
        let unsigned = CBOR.array([.unsigned(1), .unsigned(1), .bytes(alice.publicKey.bytes), .unsigned(1 << 16), body])
        let signature = try alice.sign(Record.signingDomain + unsigned.encoded())
        guard case let .array(fields) = unsigned else { return }
        #expect {
            try Record.decode(CBOR.array(fields + [.bytes(signature.bytes)]).encoded())
        } throws: { error in
            if case .invalidBody = error as? RecordError { true } else { false }
        }
    }

    @Test("a sealed datagram of 1,200 bytes opens; one of 1,201 is dropped")
    func datagramSize() throws {
        #expect(Datagram.maxBytes == 1200)
        let key = SecretBytes(secureRandomBytes(32))
        // A push of n bytes seals to n + 46 bytes (type, nonce, tag, CBOR heads) for n of 256 or more.
        func sealed(_ n: Int) -> [UInt8] { Datagram.push([UInt8](repeating: 3, count: n)).seal(key: key) }
        let exact = sealed(1200 - (sealed(1000).count - 1000))
        #expect(exact.count == 1200)
        guard case let .push(payload)? = Datagram.open(exact, key: key) else { Issue.record("a 1200-byte datagram was dropped"); return }
        #expect(payload.count == exact.count - 46)
        let over = sealed(1201 - (sealed(1000).count - 1000))
        #expect(over.count == 1201)
        #expect(Datagram.open(over, key: key) == nil)
    }

    @Test("a blob of 2^30 bytes is a valid manifest, one byte more is not; chunk sizes 4096 to 1,048,576")
    func blobSize() throws {
        let zero = try Digest32(bytes: [UInt8](repeating: 0, count: 32))
        func valid(size: UInt64, chunkSize: UInt64) -> Bool {
            let count = Int((size + chunkSize - 1) / chunkSize)
            let manifest = Manifest(blob: zero, size: size, contentType: "image/jpeg", chunkSize: chunkSize,
                                    chunks: [Digest32](repeating: zero, count: count))
            return (try? manifest.validate()) != nil
        }
        #expect(Manifest.maxSize == 1 << 30)
        #expect(valid(size: 1 << 30, chunkSize: 1 << 20))
        #expect(!valid(size: (1 << 30) + 1, chunkSize: 1 << 20))
        #expect(valid(size: 1 << 20, chunkSize: 1 << 20) && !valid(size: 1 << 20, chunkSize: (1 << 20) + 1))
        #expect(valid(size: 4096, chunkSize: 4096) && !valid(size: 4096, chunkSize: 4095))
    }
}
