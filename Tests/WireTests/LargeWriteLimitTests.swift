import Crypto
import Testing
import Tree
@testable import Wire

/// The bounds of a large write (Protocol.md §3.7) as a decoder sees them: the content's size in
/// the record, and the pairs of the content, read one at a time.
@Suite("Large write limits")
struct LargeWriteLimitTests {
    let key = try! PrivateKey(seedBytes: [UInt8](repeating: 7, count: 32))

    @Test("a content of 256 MiB is a valid record; one byte more is an invalid body")
    func contentSize() throws {
        let hash = BLAKE2b.digest256([1])
        let atLimit = LargeWrite(content: hash, size: LargeWrite.maxSize, chunkSize: 1 << 20, chunks: Array(repeating: hash, count: 256))
        let record = try Record.make(body: .largeWrite(atLimit), clock: 1 << 16, signer: key)
        #expect(try Record.decode(record.encoded) == record)
        let over = LargeWrite(content: hash, size: LargeWrite.maxSize + 1, chunkSize: 1 << 20, chunks: Array(repeating: hash, count: 257))
        #expect(throws: RecordError.self) { try Record.make(body: .largeWrite(over), clock: 1 << 16, signer: key) }
    }

    @Test("a content's pair count: 262,145 claimed is refused from the array head alone, before any pair is read")
    func pairCount() throws {
        // The head of an array of 262,145 and enough bytes for that many pairs (3 each).
        let over = [0x9A, 0x00, 0x04, 0x00, 0x01] + [UInt8](repeating: 0x82, count: 3 * 262_145)
        #expect(throws: RecordError.invalidBody("262145 pairs exceed the limit of 262144")) { try LargeWriteContent.validate(over[...]) }
        // 262,144 claimed with too few bytes for them: refused as truncated, not read pair by pair.
        let short = [0x9A, 0x00, 0x04, 0x00, 0x00] + [UInt8](repeating: 0x82, count: 100)
        #expect(throws: RecordError.self) { try LargeWriteContent.validate(short[...]) }
        // Ten million claimed: the same.
        let huge: [UInt8] = [0x9A, 0x00, 0x98, 0x96, 0x80, 0x82, 0x60, 0x01]
        #expect(throws: RecordError.self) { try LargeWriteContent.validate(huge[...]) }
    }

    @Test("a content of 3,000 pairs is read back pair by pair with each value's canonical bytes, and any change of order refused")
    func readBack() throws {
        let pairs = (0..<3_000).map { WritePair(path: try! Path(String(format: "/p/%05d", $0)), value: .object(["n": .number(Double($0))])) }
        let content = LargeWriteContent.encode(pairs)
        var read = [WritePair]()
        try LargeWriteContent.forEachPair(in: content[...]) { pair, encoded in
            #expect(Array(encoded) == TreeValueCodec.encode(pair.value).encoded())
            read.append(pair)
        }
        #expect(read == pairs)
        var swapped = pairs
        swapped.swapAt(10, 11)
        let disordered = RecordCodec.encodeBody(.write(swapped)).encoded()
        #expect(throws: RecordError.self) { try LargeWriteContent.validate(disordered[...]) }
    }
}
