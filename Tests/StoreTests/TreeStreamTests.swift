import Crypto
import Testing
import Tree
import Wire
@testable import Store
import TestSupport

/// `TreeStream` writes exactly `value(at:).serialized()`, a piece at a time, from a snapshot that
/// later writes do not change.
@Suite("Tree streams")
struct TreeStreamTests {
    static func streamed(_ snapshot: TreeSnapshot, _ path: Path, rows: Int, size: Int) throws -> String {
        let stream = snapshot.stream(path, wholeReadRows: rows)
        var bytes: [UInt8] = []
        while let piece = try stream.next(size: size) { bytes += piece }
        return String(decoding: bytes, as: UTF8.self)
    }

    @Test("a streamed value is its serialization, for random trees, at every size of piece and of whole reads", arguments: 0..<12)
    func equalsSerialization(seed: UInt64) throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let store = try Store(path: dir.path + "/store.sqlite")
        var generator = IndexedQueryTests.Generator(rng: SplitMix64(seed: seed), authors: testAuthors)
        var clock: UInt64 = 1_700_000_000_000 << 16
        for _ in 0..<80 {
            clock += 1 << 16
            _ = try store.ingest([generator.record(clock: clock)], nowMillis: farFuture)
        }
        // Arrays (dense and with holes), integer keys and an object nested deep.
        let author = testAuthors[0]
        _ = try store.set(try Path("/arrays"), to: ["dense": .object(Dictionary(uniqueKeysWithValues: (0..<12).map { (String($0), JSONValue.number(Double($0))) })),
                                                    "holes": ["0": 1, "3": ["x": true], "5": "s"], "sparse": ["0": 1, "9": 2],
                                                    "ints": ["-3": 1, "10": 2, "9": 3, "a": 4]], signer: author, nowMillis: 1_700_000_000_000)
        let snapshot = try #require(try TreeSnapshot.open(store))
        for path in ["/", "/conversations", "/conversations/c1/messages", "/users", "/open", "/arrays", "/nothing", "/arrays/holes/5"] {
            let p = try Path(path)
            let expected = try store.value(at: p).serialized()
            for (rows, size) in [(0, 1), (1, 7), (3, 64), (256, 1 << 16)] {
                #expect(try Self.streamed(snapshot, p, rows: rows, size: size) == expected, "seed \(seed) \(path) rows \(rows) size \(size)")
            }
        }
        // Later writes leave the snapshot as it was.
        let before = try store.value(at: .root).serialized()
        _ = try store.set(try Path("/arrays/dense/3"), to: "changed", signer: author, nowMillis: 1_700_000_000_001)
        #expect(try Self.streamed(snapshot, .root, rows: 1, size: 100) == before)
        snapshot.close()
        #expect(try TreeSnapshot.open(store).map { try Self.streamed($0, .root, rows: 1, size: 100) } == store.value(at: .root).serialized())
    }

    @Test("a value of 256 leaves and zones is read whole; one more makes it large, whichever kind the extra row is")
    func largeValueThreshold() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let store = try Store(path: dir.path + "/store.sqlite")
        let author = testAuthors[0]
        let rows = TreeStream.wholeReadRows
        let leaves = JSONValue.object(Dictionary(uniqueKeysWithValues: (0..<rows).map { ("k\($0)", JSONValue.number(Double($0))) }))
        _ = try store.set(try Path("/open"), to: leaves, signer: author, nowMillis: 1_700_000_000_000)
        #expect(try !store.isLargeValue(at: Path("/open")))
        #expect(try !store.isLargeValue(at: Path("/open"), rows: rows))
        _ = try store.set(try Path("/open/one-more"), to: true, signer: author, nowMillis: 1_700_000_000_001)
        #expect(try store.isLargeValue(at: Path("/open")))
        // Messages count as a row each, whole (their fields are inside the zone's row).
        let messages = try Path("/conversations/c/messages")
        for n in 0..<(rows - 1) {
            _ = try store.push(messages, value: ["senderId": .string(author.publicKey.userID), "text": .string("hello \(n)"), "date": .number(Double(n))], signer: author,
                               nowMillis: 1_700_000_000_002 + UInt64(n))
        }
        _ = try store.set(try Path("/conversations/c/meta/title"), to: "Chat", signer: author, nowMillis: 1_700_000_001_000)
        #expect(try !store.isLargeValue(at: Path("/conversations/c")))
        let last = try store.push(messages, value: ["senderId": .string(author.publicKey.userID), "text": "one more"], signer: author, nowMillis: 1_700_000_001_001).key
        #expect(try store.isLargeValue(at: Path("/conversations/c")))
        // Inside a message nothing is large.
        #expect(try !store.isLargeValue(at: messages.appending(last), rows: 0))
    }
}
