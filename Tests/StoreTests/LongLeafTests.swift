import Foundation
import Testing
import Tree
import Wire
@testable import Store
import TestSupport

/// Long strings of the open zone kept out of the WITHOUT ROWID `leaves` (migration 14,
/// `LeafValue`): they read back exactly, go with their leaf however it goes, survive a rebuild and
/// the migration, and writes beside a 10 MB string cost about what they cost without it.
@Suite("Long leaf values")
struct LongLeafTests {
    let alice = testAuthors[0]
    let now: UInt64 = 1_700_000_000_000
    static let tenMB = String(repeating: "0123456789", count: 1_000_000)

    func outOfLine(_ store: Store) throws -> Int64 { try store.db.scalarInt("SELECT count(*) FROM leaf_values") ?? -1 }

    /// Seconds taken by 100 small values written at new paths that sort right beside `/doc/big`
    /// (`round` names them apart): as 100 sets, or as one update of 100 children.
    func hundredNeighbours(_ store: Store, round: Int, oneUpdate: Bool) throws -> Double {
        let clock = ContinuousClock()
        let names = (0..<100).map { "bi\(oneUpdate ? "u" : "s")\(round)\(String(format: "%03d", $0))" }
        let elapsed = try clock.measure {
            if oneUpdate {
                let members = Dictionary(uniqueKeysWithValues: names.enumerated().map { ($1, JSONValue.number(Double($0))) })
                _ = try store.update(try Path("/doc"), with: .object(members), signer: alice, nowMillis: now + UInt64(round * 1000))
            } else {
                for (i, name) in names.enumerated() {
                    _ = try store.set(try Path("/doc/\(name)"), to: .number(Double(i)), signer: alice, nowMillis: now + UInt64(round * 1000 + i))
                }
            }
        }
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }

    @Test("small writes beside a 10 MB string take about what they take beside a short one", arguments: [false, true])
    func neighboursOfALongString(oneUpdate: Bool) throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let long = try Store(path: directory.path + "/long.sqlite")
        let short = try Store(path: directory.path + "/short.sqlite")
        _ = try long.set(try Path("/doc/big"), to: .string(Self.tenMB), signer: alice, nowMillis: now - 1)
        _ = try short.set(try Path("/doc/big"), to: "short", signer: alice, nowMillis: now - 1)
        // Rounds taken in turn, and the fastest of each compared: the disk's syncs and other work
        // on the machine slow some rounds down whatever the store holds.
        var withShort = Double.infinity, withLong = Double.infinity
        for round in 0..<4 {
            withShort = min(withShort, try hundredNeighbours(short, round: round, oneUpdate: oneUpdate))
            withLong = min(withLong, try hundredNeighbours(long, round: round, oneUpdate: oneUpdate))
        }
        // Kept in its `leaves` row, the string was read whole (10 MB) at every seek that compared
        // against it: measured 5 times slower as 100 sets (each also waits for its commit), 20
        // times as one update. Out of line, the writes do not touch it (measured 0.8 to 1.3 times).
        #expect(withLong <= 3 * withShort + 0.05, "beside a 10 MB string \(withLong) s, beside a short one \(withShort) s")
        #expect(try long.value(at: try Path("/doc/big")) == .string(Self.tenMB))
        #expect(try long.value(at: try Path(oneUpdate ? "/doc/biu2042" : "/doc/bis2042")) == 42)
        #expect(try outOfLine(long) == 1)
        #expect(try outOfLine(short) == 0)
    }

    @Test("a long string reads back exactly, in its parent too, and its out-of-line row goes with its leaf")
    func rowFollowsTheLeaf() throws {
        let store = try memoryStore()
        let text = String(repeating: "é", count: 600)  // 1,200 bytes: out of line
        _ = try store.set(try Path("/a/text"), to: .string(text), signer: alice, nowMillis: now)
        _ = try store.set(try Path("/a/small"), to: "s", signer: alice, nowMillis: now + 1)
        #expect(try outOfLine(store) == 1)
        #expect(try store.value(at: try Path("/a")) == ["text": .string(text), "small": "s"])
        #expect(try store.db.scalarInt("SELECT kind FROM leaves WHERE path = ?", [.text(StoreKey.of(try Path("/a/text")))]) == 4)

        // The bound: 512 bytes stay in the row, 513 go out of line.
        _ = try store.set(try Path("/edge"), to: ["at": .string(String(repeating: "a", count: 512)),
                                                  "past": .string(String(repeating: "a", count: 513))], signer: alice, nowMillis: now + 1)
        #expect(try store.db.scalarInt("SELECT kind FROM leaves WHERE path = ?", [.text(StoreKey.of(try Path("/edge/at")))]) == 3)
        #expect(try store.db.scalarInt("SELECT kind FROM leaves WHERE path = ?", [.text(StoreKey.of(try Path("/edge/past")))]) == 4)
        _ = try store.delete(try Path("/edge"), signer: alice, nowMillis: now + 1)

        // Replaced by another long string, by a short one, by an object, deleted, cut by a set above.
        _ = try store.set(try Path("/a/text"), to: .string(text + "!"), signer: alice, nowMillis: now + 2)
        #expect(try outOfLine(store) == 1)
        #expect(try store.value(at: try Path("/a/text")) == .string(text + "!"))
        _ = try store.set(try Path("/a/text"), to: "short", signer: alice, nowMillis: now + 3)
        #expect(try outOfLine(store) == 0)
        _ = try store.set(try Path("/a/text"), to: .string(text), signer: alice, nowMillis: now + 4)
        _ = try store.set(try Path("/a/text/inner"), to: 1, signer: alice, nowMillis: now + 5)
        #expect(try outOfLine(store) == 0)
        #expect(try store.value(at: try Path("/a/text")) == ["inner": 1])
        _ = try store.set(try Path("/a/text"), to: .string(text), signer: alice, nowMillis: now + 6)
        _ = try store.delete(try Path("/a/text"), signer: alice, nowMillis: now + 7)
        #expect(try outOfLine(store) == 0)
        _ = try store.set(try Path("/a/text"), to: .string(text), signer: alice, nowMillis: now + 8)
        _ = try store.set(try Path("/a"), to: ["other": 1], signer: alice, nowMillis: now + 9)
        #expect(try outOfLine(store) == 0)
        #expect(try store.value(at: try Path("/a")) == ["other": 1])

        // A late older write does not bring back what a newer one replaced.
        _ = try store.set(try Path("/b"), to: .string(text), signer: alice, nowMillis: now + 20)
        let older = try Record.make(body: .write([WritePair(path: try Path("/b"), value: .string(text + "old"))]), clock: (now + 10) << 16, signer: alice)
        _ = try store.ingest([older], nowMillis: now + 30)
        #expect(try store.value(at: try Path("/b")) == .string(text))
        #expect(try outOfLine(store) == 1)
    }

    @Test("a conversation's long title is read from out of line")
    func longTitle() throws {
        let store = try memoryStore()
        let title = String(repeating: "T", count: 2_000)
        _ = try store.set(try Path("/conversations/c1/meta/title"), to: .string(title), signer: alice, nowMillis: now)
        #expect(try outOfLine(store) == 1)
        #expect(try store.value(at: try Path("/conversations/c1/meta/title")) == .string(title))
    }

    @Test("a rebuild folds long strings out of line again, leaving no stray row")
    func rebuild() throws {
        let store = try memoryStore()
        let text = String(repeating: "r", count: 5_000)
        _ = try store.set(try Path("/r/one"), to: .string(text), signer: alice, nowMillis: now)
        _ = try store.set(try Path("/r/two"), to: .string(text + "2"), signer: alice, nowMillis: now + 1)
        try store.transaction { try store.refoldEverything() }
        #expect(try outOfLine(store) == 2)
        #expect(try store.value(at: try Path("/r")) == ["one": .string(text), "two": .string(text + "2")])
    }

    @Test("migration 14 moves the long strings of a store written before it out of line")
    func migration() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.path + "/store.sqlite"
        let text = String(repeating: "m", count: 3_000)
        do {
            let store = try Store(path: path)
            _ = try store.set(try Path("/m/long"), to: .string(text), signer: alice, nowMillis: now)
            _ = try store.set(try Path("/m/short"), to: "s", signer: alice, nowMillis: now + 1)
            // Back to version 13: the string in its `leaves` row, as stores before the migration keep it.
            try store.db.execute("""
                DROP TRIGGER leaf_values_replaced; DROP TRIGGER leaf_values_deleted;
                UPDATE leaves SET kind = 3, value = (SELECT value FROM leaf_values WHERE id = leaves.value) WHERE kind = 4;
                DROP TABLE leaf_values; PRAGMA user_version = 13;
                """)
            #expect(try store.db.scalarInt("SELECT count(*) FROM leaves WHERE kind = 3 AND length(value) = 3000") == 1)
        }
        let store = try Store(path: path)
        #expect(try store.db.userVersion == 15)
        #expect(try outOfLine(store) == 1)
        #expect(try store.db.scalarInt("SELECT count(*) FROM leaves WHERE kind = 4") == 1)
        #expect(try store.value(at: try Path("/m")) == ["long": .string(text), "short": "s"])
        _ = try store.delete(try Path("/m/long"), signer: alice, nowMillis: now + 2)
        #expect(try outOfLine(store) == 0)
    }
}
