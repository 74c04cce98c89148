import Crypto
import Testing
import Tree
import Wire
@testable import Store

/// Write order (Protocol.md §5.3) seen through the tree: the clock first, as a number; on equal
/// clocks the bytewise larger author; on equal clocks and authors the bytewise larger record id.
/// Expected winners are worked out here from the bytes, not by `WriteOrder`.
@Suite("Write order")
struct WriteOrderTests {
    let path = try! Path("/a")
    let now: UInt64 = 1_700_000_000_000

    func winner(_ records: [Record]) throws -> JSONValue {
        var values = Set<String>()
        for order in [records, records.reversed()] {
            let store = try memoryStore()
            for record in order { _ = try store.ingest([record], nowMillis: now) }
            values.insert(try store.value(at: path).serialized())
        }
        #expect(values.count == 1, "both arrival orders agree")
        let store = try memoryStore()
        _ = try store.ingest(records, nowMillis: now)
        return try store.value(at: path)
    }

    func write(_ text: String, clock: UInt64, by author: PrivateKey) throws -> Record {
        try Record.make(body: .write([WritePair(path: path, value: .string(text))]), clock: clock, signer: author)
    }

    @Test("the later clock wins, whoever the author")
    func clockFirst() throws {
        for (early, late) in [(testAuthors[0], testAuthors[1]), (testAuthors[1], testAuthors[0])] {
            #expect(try winner([write("early", clock: 5 << 16, by: early), write("late", clock: 5 << 16 | 1, by: late)]) == "late")
        }
        // Numeric, not textual: 10 ms after 9 ms (a decimal string would sort "10" first).
        #expect(try winner([write("nine", clock: 9 << 16, by: testAuthors[2]), write("ten", clock: 10 << 16, by: testAuthors[0])]) == "ten")
    }

    @Test("equal clocks: the bytewise larger author wins")
    func authorSecond() throws {
        let (a, b) = (testAuthors[0], testAuthors[1])
        let larger = a.publicKey.bytes.lexicographicallyPrecedes(b.publicKey.bytes) ? b : a
        let smaller = larger === a ? b : a
        #expect(try winner([write("larger", clock: 7 << 16, by: larger), write("smaller", clock: 7 << 16, by: smaller)]) == "larger")
    }

    @Test("equal clocks and author: the bytewise larger record id wins")
    func idLast() throws {
        let author = testAuthors[2]
        let records = try ["x", "y", "z", "w"].map { try write($0, clock: 3 << 16, by: author) }
        let last = records.max { $0.id.bytes.lexicographicallyPrecedes($1.id.bytes) }!
        guard case let .write(pairs) = last.body else { Issue.record("not a write"); return }
        #expect(try winner(records) == pairs[0].value)
    }
}
