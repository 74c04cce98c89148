import Testing
import TestSupport
import Tree
@testable import Wire

/// A content read a piece at a time (`LargeWriteContentSource`), as a node reads it from its
/// chunks, gives exactly what the whole content gives: the same pairs, the same value bytes,
/// the same refusals, whatever the pieces' sizes.
@Suite("Large write content read in pieces")
struct LargeWriteStreamTests {
    /// `content` handed out in pieces of sizes drawn from `sizes`.
    static func pieces(_ content: [UInt8], sizes: ClosedRange<Int>, seed: UInt64) -> LargeWriteContentSource {
        var random = SplitMix64(seed: seed)
        var offset = 0
        return LargeWriteContentSource(size: content.count) {
            guard offset < content.count else { return nil }
            let size = Int.random(in: sizes, using: &random)
            defer { offset = min(content.count, offset + size) }
            return content[offset..<min(content.count, offset + size)]
        }
    }

    static func randomValue(_ random: inout SplitMix64, depth: Int) -> JSONValue {
        switch random.next() % (depth > 3 ? 4 : 6) {
        case 0: return .number(Double(random.next() % 10_000))
        case 1: return .bool(random.chance(0.5))
        case 2: return .string(String(repeating: "é0123456789", count: Int(random.next() % 40)))
        case 3: return .string("")
        default:
            var members = [String: JSONValue]()
            for i in 0..<Int(1 + random.next() % 6) { members["k\(i)\(random.next() % 100)"] = randomValue(&random, depth: depth + 1) }
            return .object(members)
        }
    }

    static func randomPairs(seed: UInt64, count: Int) -> [WritePair] {
        var random = SplitMix64(seed: seed)
        var pairs = [WritePair]()
        for i in 0..<count {
            // One value of about 100 KB now and then: a pair longer than many pieces.
            let value = random.chance(0.02) ? .string(String(repeating: "x", count: 100_000)) : randomValue(&random, depth: 0)
            pairs.append(WritePair(path: try! Path("/r/\(String(format: "%05d", i))/v\(random.next() % 9)"), value: value))
        }
        return pairs
    }

    @Test("random contents read in pieces of 1 to 70,000 bytes give the pairs and value bytes the whole content gives", arguments: [1, 2, 3, 4])
    func piecesAsWhole(seed: UInt64) throws {
        let pairs = Self.randomPairs(seed: seed, count: 400)
        let content = LargeWriteContent.encode(pairs)
        var whole = [(WritePair, [UInt8])]()
        try LargeWriteContent.forEachPair(in: content[...]) { whole.append(($0, Array($1))) }
        #expect(whole.map(\.0) == LargeWriteContent.canonical(pairs))
        for sizes in [1...1, 1...64, 4096...4096, 1...70_000] {
            try LargeWriteContent.validate(reading: Self.pieces(content, sizes: sizes, seed: seed))
            var read = [(WritePair, [UInt8])]()
            try LargeWriteContent.forEachPair(reading: Self.pieces(content, sizes: sizes, seed: seed)) { read.append(($0, Array($1))) }
            #expect(read.count == whole.count)
            #expect(read.map(\.0) == whole.map(\.0))
            #expect(read.map(\.1) == whole.map(\.1))
        }
    }

    @Test("a damaged content is refused in pieces as it is whole: truncated anywhere, trailing bytes, out of order")
    func refusalsAlike() throws {
        let content = LargeWriteContent.encode(Self.randomPairs(seed: 9, count: 60))
        var damaged: [[UInt8]] = [content + [0], Array(content.prefix(1)), []]
        for cut in stride(from: 1, to: content.count, by: max(1, content.count / 40)) { damaged.append(Array(content.prefix(cut))) }
        var swapped = LargeWriteContent.canonical(Self.randomPairs(seed: 9, count: 60))
        swapped.swapAt(3, 4)
        damaged.append(RecordCodec.encodeBody(.write(swapped)).encoded())
        for bytes in damaged {
            #expect(throws: RecordError.self) { try LargeWriteContent.validate(bytes[...]) }
            for sizes in [1...1, 1...300] {
                #expect(throws: RecordError.self) { try LargeWriteContent.validate(reading: Self.pieces(bytes, sizes: sizes, seed: 1)) }
            }
        }
    }

    /// An error of the source (a disk that fails) is not taken for an invalid content, which
    /// would void the write for good.
    struct DiskFailed: Error {}

    @Test("a source that fails is told as its own error, not as an invalid content")
    func sourceFailure() throws {
        let content = LargeWriteContent.encode(Self.randomPairs(seed: 5, count: 50))
        var given = false
        let failing = LargeWriteContentSource(size: content.count) {
            if given { throw DiskFailed() }
            given = true
            return content.prefix(content.count / 2)
        }
        #expect(throws: DiskFailed.self) { try LargeWriteContent.validate(reading: failing) }
    }

    @Test("the reader keeps no more of a content than about twice its largest pair and one piece ahead of the pair it hands out")
    func boundedReadAhead() throws {
        let pairs = LargeWriteContent.canonical(Self.randomPairs(seed: 21, count: 3_000))
        let content = LargeWriteContent.encode(canonical: pairs)
        let piece = 4096
        var read = 0
        var offset = 0
        let source = LargeWriteContentSource(size: content.count) {
            guard offset < content.count else { return nil }
            defer { offset = min(content.count, offset + piece) }
            read = min(content.count, offset + piece)
            return content[offset..<read]
        }
        // Where each pair ends in the content: the array head, then each pair's own bytes.
        var consumed = CBORHead.length(ofCount: pairs.count)
        var largest = 0
        var worst = 0
        try LargeWriteContent.forEachPair(reading: source) { pair, value in
            let length = 1 + CBOR.text(pair.path.storageKey).encoded().count + value.count
            consumed += length
            largest = max(largest, length)
            worst = max(worst, read - consumed)
        }
        #expect(consumed == content.count)
        #expect(largest > 50_000, "some pair spans many pieces")
        #expect(worst <= 2 * largest + piece, "read \(worst) bytes ahead")
        #expect(worst < content.count / 4)
    }
}

/// The length of a CBOR array head of `count` items in its shortest form.
enum CBORHead {
    static func length(ofCount count: Int) -> Int {
        count < 24 ? 1 : count < 256 ? 2 : count < 65_536 ? 3 : 5
    }
}
