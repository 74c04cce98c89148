import Testing
@testable import Sync

@Suite("Negentropy encodings")
struct NegentropyEncodingTests {
    /// Hand-computed: base-128 digits, most significant first, high bit on all but the last.
    static let varints: [(UInt64, [UInt8])] = [
        (0, [0x00]),
        (1, [0x01]),
        (127, [0x7F]),
        (128, [0x81, 0x00]),
        (300, [0x82, 0x2C]),          // 300 = 2·128 + 44
        (16_383, [0xFF, 0x7F]),
        (16_384, [0x81, 0x80, 0x00]), // 128²
        (UInt64.max, [0x81, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x7F]),
    ]

    @Test("varints encode and decode to hand-computed bytes", arguments: 0..<8)
    func varint(index: Int) throws {
        let (value, bytes) = Self.varints[index]
        #expect(NegentropyVarint.encode(value) == bytes)
        #expect(NegentropyVarint.length(value) == bytes.count)
        let decoded = try NegentropyMessageReader.varint(bytes + [0xAA])
        #expect(decoded.value == value)
        #expect(decoded.length == bytes.count)
    }

    @Test("varints that are too long, overflow, or are not minimal are rejected")
    func badVarints() {
        #expect(throws: NegentropyError.varintOverflow) {
            try NegentropyMessageReader.varint([0x82] + Array(repeating: 0x80, count: 8) + [0x00])
        }
        #expect(throws: NegentropyError.varintOverflow) {
            try NegentropyMessageReader.varint(Array(repeating: 0xFF, count: 11) + [0x00])
        }
        #expect(throws: NegentropyError.nonMinimalVarint) { try NegentropyMessageReader.varint([0x80, 0x01]) }
        #expect(throws: NegentropyError.truncated) { try NegentropyMessageReader.varint([0x81]) }
    }

    @Test("bounds: timestamp deltas plus one, 0 for infinity, then the id prefix")
    func bounds() {
        var out = NegentropyMessageWriter()
        out.append(bound: NegentropyBound(timestamp: 5, id: .zero, prefixLength: 0))
        out.append(bound: NegentropyBound(timestamp: 5, id: NegentropyPackedID(bytes: [0xAB]), prefixLength: 1))
        out.append(bound: NegentropyBound(timestamp: 300, id: .zero, prefixLength: 0))
        out.append(bound: .infinity)
        #expect(out.bytes == [0x61, 0x06, 0x00, 0x01, 0x01, 0xAB, 0x82, 0x28, 0x00, 0x00, 0x00])
    }

    @Test("a bound between two items uses the shortest separating id prefix")
    func minimalBound() {
        func item(_ timestamp: UInt64, _ prefix: [UInt8]) -> NegentropyPackedItem {
            NegentropyPackedItem(NegentropyItem(timestamp: timestamp, id: prefix + Array(repeating: 0, count: 32 - prefix.count))!)
        }
        let differentTimes = NegentropyBound.between(item(5, [9, 9]), item(7, [1]))
        #expect(differentTimes.timestamp == 7 && differentTimes.prefixLength == 0)

        let sameTime = NegentropyBound.between(item(5, [1, 2, 3, 0xFF]), item(5, [1, 2, 4]))
        var out = NegentropyMessageWriter()
        out.append(bound: sameTime)
        #expect(out.bytes == [0x61, 0x06, 0x03, 0x01, 0x02, 0x04])
        #expect(sameTime.isAtOrBelow(item(5, [1, 2, 4])))
        #expect(!sameTime.isAtOrBelow(item(5, [1, 2, 3, 0xFF, 0xFF])))

        let lastByte = NegentropyBound.between(item(5, Array(repeating: 7, count: 31) + [1]), item(5, Array(repeating: 7, count: 31) + [2]))
        #expect(lastByte.prefixLength == 32)
    }

    /// Expected digests computed independently (Python hashlib) from the definition:
    /// SHA-256(sum of ids as 256-bit little-endian mod 2^256 || varint(count)), first 16 bytes.
    @Test("fingerprints of known sets, including carries across limbs and wrap-around")
    func fingerprints() {
        let lowWordOnes = Array(repeating: UInt8(0xFF), count: 8) + Array(repeating: 0, count: 24)
        let one = [UInt8(1)] + Array(repeating: 0, count: 31)
        let allOnes = Array(repeating: UInt8(0xFF), count: 32)
        // (2^64 - 1) + 1 = 2^64: the carry must move into byte 8.
        #expect(NegentropyFingerprint.of([lowWordOnes, one]) == hex("fe77277fdc1349df808b365582fa9199"))
        // 1 + (2^256 - 1) = 0 mod 2^256.
        #expect(NegentropyFingerprint.of([one, allOnes]) == hex("58cc2f44d3a27866874701fbad573da9"))
        #expect(NegentropyFingerprint.of([]) == hex("7f9c9e31ac8256ca2f258583df262dbc"))

        let items = NegentropySortedItems([
            NegentropyItem(timestamp: 2, id: one)!, NegentropyItem(timestamp: 1, id: lowWordOnes)!,
        ])
        #expect(items.fingerprint(0..<2) == hex("fe77277fdc1349df808b365582fa9199"))
    }

    @Test("items order by timestamp then id bytes; storage sorts and deduplicates")
    func itemsAndStorage() {
        let low = NegentropyItem(timestamp: 1, id: [0xFF] + Array(repeating: 0, count: 31))!
        let high = NegentropyItem(timestamp: 2, id: Array(repeating: 0, count: 32))!
        let highTie = NegentropyItem(timestamp: 2, id: Array(repeating: 0, count: 31) + [1])!
        #expect(low < high && high < highTie)
        #expect(NegentropyItem(timestamp: 1, id: [1, 2, 3]) == nil)
        #expect(NegentropyItem(timestamp: .max, id: Array(repeating: 0, count: 32)) == nil)

        let storage = NegentropySortedItems([highTie, low, high, low, highTie])
        #expect(Array(storage) == [low, high, highTie])
        let bound = NegentropyBound(timestamp: 2, id: NegentropyPackedID(bytes: Array(repeating: 0, count: 31) + [1]), prefixLength: 32)
        #expect(storage.lowerBound(of: bound, in: 0..<3) == 2)
        #expect(storage.lowerBound(of: .infinity, in: 0..<3) == 3)
        #expect(storage.lowerBound(of: .zero, in: 0..<3) == 0)
    }

    @Test("first messages: an id list for small sets, 16 fingerprinted buckets otherwise")
    func initialMessages() throws {
        var empty = try NegentropySession(items: [NegentropyItem]())
        #expect(try empty.initiate() == [0x61, 0x00, 0x00, 0x02, 0x00])

        let id = (0..<32).map { UInt8($0) }
        var single = try NegentropySession(items: [NegentropyItem(timestamp: 10, id: id)!])
        #expect(try single.initiate() == [0x61, 0x00, 0x00, 0x02, 0x01] + id)

        // 32 items at timestamps 1...32: buckets of two, bounds at timestamps 3, 5, ...
        let items = (1...32).map { NegentropyItem(timestamp: UInt64($0), id: Array(repeating: UInt8($0), count: 32))! }
        var session = try NegentropySession(items: items)
        let message = try session.initiate()
        let first = [UInt8(0x04), 0x00, 0x01] + NegentropyFingerprint.of([items[0].id, items[1].id])
        let second = [UInt8(0x03), 0x00, 0x01] + NegentropyFingerprint.of([items[2].id, items[3].id])
        #expect(Array(message.prefix(1 + 2 * 19)) == [0x61] + first + second)
        let last = [UInt8(0x00), 0x00, 0x01] + NegentropyFingerprint.of([items[30].id, items[31].id])
        #expect(Array(message.suffix(19)) == last)
        #expect(message.count == 1 + 16 * 19)
    }
}
