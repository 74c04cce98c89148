import Foundation
import Crypto
import SQLite
import Testing
import Tree
import Wire
@testable import Store
import TestSupport

/// Migration 10 and what ingest now writes: a message written once keeps its value only in its
/// record (the zone row holds the empty marker), and each message list has its key ordering
/// before any query asks for it.
///
/// `Fixtures/store-version-9.sqlite` was written by `lanchat import` at schema version 9 from the
/// records of `store-version-6.sqlite` (see `StoreOnceMigrationTests`), in arrival order, so its
/// zones name their first record and hold their values whole.
@Suite("Store migration 10")
struct ValuesInRecordsTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures").path
    static let messages = try! Path("/conversations/general/messages")

    @Test("a version 9 store opens with its values in their records and its key orderings, and reads the same tree")
    func migration() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.path + "/store.sqlite"
        try FileManager.default.copyItem(atPath: Self.fixtures + "/store-version-9.sqlite", toPath: path)
        let tree: JSONValue
        let lastMessages: JSONValue
        do {
            // The tree as version 9 reads it: each zone's value from its row.
            let before = try Connection(path: path)
            #expect(try before.userVersion == 9)
            #expect(try before.scalarInt("SELECT count(*) FROM zones WHERE length(value) = 0") == 0)
            #expect(try before.scalarInt("SELECT count(*) FROM zone_orders") == 0)
            var members = [String: JSONValue]()
            let (low, high) = StoreKey.descendants(StoreKey.of(Self.messages))
            try before.query("SELECT zone, value FROM zones WHERE zone >= ? AND zone < ? AND value IS NOT NULL", [.text(low), .text(high)]) { row in
                let zone = try StoreKey.path(row.text(0))
                members[zone.key!] = try ZoneStore.decode(row.blob(1), zone: Zone.of(zone))
            }
            lastMessages = .object(members)
            #expect(members.count == 4)
        }
        do {
            let reference = try memoryStore()
            let old = try Connection(path: path)
            try old.query("SELECT bytes FROM records ORDER BY seq") { row in
                _ = try reference.ingest([try Record.decode(row.blob(0))], nowMillis: farFuture)
            }
            tree = try reference.value(at: .root)
        }

        let store = try Store(path: path)
        #expect(try store.db.userVersion == Schema.latestVersion)
        // Messages written once now keep their value in their record only; an edited one keeps it whole.
        let marked = try #require(try store.db.scalarInt("SELECT count(*) FROM zones WHERE length(value) = 0"))
        #expect(marked >= 3)
        #expect(try store.db.scalarInt("SELECT count(*) FROM zones WHERE length(value) > 0") ?? 0 >= 1)
        #expect(try store.db.scalarInt("SELECT count(*) FROM zone_orders WHERE list = ? AND field = '$key'",
                                       [.text(StoreKey.of(Self.messages))]) == 1)
        #expect(try store.value(at: .root) == tree)
        #expect(try store.value(at: Self.messages) == lastMessages)
        let query = FirebaseQuery(order: .key, limit: .last(2))
        #expect(try store.query(query, at: Self.messages) == query.apply(to: lastMessages))
        #expect(try store.integrityCheck() == ["ok"])
    }

    @Test("ingest keeps a message written once in its record, has its list in key order at once, and folds later edits as before")
    func ingest() throws {
        let alice = testAuthors[0]
        let store = try memoryStore()
        let reference = try memoryStore()
        let list = Self.messages
        var records = [Record]()
        for i in 0..<20 {
            let key = MessageKey.bind(String(format: "-N%06d", i), to: alice.publicKey.userID)
            let value: JSONValue = .object(["senderId": .string(alice.publicKey.userID), "text": .string("message \(i)"), "date": .number(Double(i))])
            records.append(try Record.make(body: .write([WritePair(path: try list.appending(key), value: value)]), clock: UInt64(1_000 + i) << 16, signer: alice))
        }
        _ = try store.ingest(records, nowMillis: farFuture)
        #expect(try store.db.scalarInt("SELECT count(*) FROM zones WHERE length(value) = 0") == 20)
        // Push-id keys sort as their bytes: the zones' own index is the list's key order, before
        // any query, with no ordering rows written.
        #expect(try store.db.scalarInt("SELECT count(*) FROM zone_orders WHERE list = ? AND field = '$key'", [.text(StoreKey.of(list))]) == 0)
        #expect(try store.db.scalarInt("SELECT count(*) FROM zone_order_rows") == 0)
        let first = FirebaseQuery(order: .key, limit: .last(3))
        #expect(try store.query(first, at: list) == first.apply(to: try store.value(at: list)))

        // An edit writes the value whole; a pair older than the message folds it again; a delete clears it.
        guard case let .write(pairs) = records[3].body, case let .write(deleted) = records[5].body else { Issue.record("not a write"); return }
        let third = pairs[0].path
        let later: [Record] = [
            try Record.make(body: .write([WritePair(path: try third.appending("text"), value: "edited")]), clock: 5_000 << 16, signer: alice),
            try Record.make(body: .write([WritePair(path: try third.appending("mood"), value: "older")]), clock: 500 << 16, signer: alice),
            try Record.make(body: .write([WritePair(path: deleted[0].path, value: .null)]), clock: 6_000 << 16, signer: alice),
        ]
        for (index, record) in (records + later).enumerated().reversed() {
            _ = try reference.ingest([record], nowMillis: farFuture)
            if index >= records.count { _ = try store.ingest([record], nowMillis: farFuture) }
        }
        #expect(try store.value(at: .root) == reference.value(at: .root))
        #expect(try store.value(at: try third.appending("text")) == "edited")
        // Older than the message's own write at its root, which replaces it: folded again, and hidden.
        #expect(try store.value(at: try third.appending("mood")) == .null)
        #expect(try store.value(at: deleted[0].path) == .null)
        #expect(try store.db.scalarInt("SELECT count(*) FROM zones WHERE length(value) = 0") == 18)
        let query = FirebaseQuery(order: .key, limit: .last(5))
        #expect(try store.query(query, at: list) == query.apply(to: try reference.value(at: list)))
    }

    @Test("a zone row whose record is gone is reported as a damaged store, not read as empty")
    func missingRecord() throws {
        let alice = testAuthors[0]
        let store = try memoryStore()
        let key = MessageKey.bind("-Nlost", to: alice.publicKey.userID)
        let path = try Self.messages.appending(key)
        let record = try Record.make(body: .write([WritePair(path: path, value: .object(["senderId": .string(alice.publicKey.userID), "text": "hi"]))]),
                                     clock: 1 << 16, signer: alice)
        _ = try store.ingest([record], nowMillis: farFuture)
        try store.db.run("DELETE FROM records")
        #expect(throws: StoreError.self) { try store.value(at: path) }
    }
}
