import Foundation
import Crypto
import SQLite
import Testing
import Tree
import Wire
@testable import Store

/// Migration 8 (each message kept once): a store written by the version before it opens, reads
/// the same tree, and folds later records exactly as a store built from scratch does.
///
/// `Fixtures/store-version-6.sqlite` was written by `lanchat` at schema version 6: three users
/// (one of them the owner of `store-version-6-alice.key`), a conversation with messages, an edit,
/// a deleted field, a photo message, open-zone meta, a message written by Alice under a key
/// bound to Bích (so Bích owns it), a key bound to nobody claimed by both (disputed), all
/// imported newest first, so that nearly every pair arrived after a later one.
@Suite("Store migration 8")
struct StoreOnceMigrationTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures").path

    /// A copy of the fixture, opened (so migrated).
    func migratedStore(in directory: TemporaryDirectory) throws -> Store {
        let path = directory.path + "/store.sqlite"
        try FileManager.default.copyItem(atPath: Self.fixtures + "/store-version-6.sqlite", toPath: path)
        let before = try Connection(path: path)
        #expect(try before.userVersion == 6)
        #expect(try before.scalarInt("SELECT count(*) FROM zone_pairs") ?? 0 > 0)
        return try Store(path: path)
    }

    /// A store in memory holding the same records, ingested in `order`.
    func rebuilt(from store: Store, reversed: Bool) throws -> Store {
        var records = [Record]()
        try store.forEachRecord { records.append(try Record.decode($0, verify: true)) }
        let fresh = try memoryStore()
        for record in reversed ? records.reversed() : records { _ = try fresh.ingest([record], nowMillis: farFuture) }
        return fresh
    }

    @Test("an older store opens in the new layout and reads the same tree as one built from its records")
    func sameTree() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let store = try migratedStore(in: directory)
        #expect(try store.db.userVersion == 15)  // and the migrations after it
        #expect(try store.db.scalarInt("SELECT count(*) FROM sqlite_master WHERE name = 'zone_pairs'") == 0)
        let zoneColumns = try store.db.all("SELECT name FROM pragma_table_info('zones')") { $0.text(0) }
        #expect(zoneColumns == ["zone", "owner", "first_seq", "last_seq", "value"])
        let recordColumns = try store.db.all("SELECT name FROM pragma_table_info('records')") { $0.text(0) }
        #expect(recordColumns == ["seq", "id", "clock", "kind", "bytes"])
        // Every zone that holds a value names the record folded last, and every record that
        // wrote into a zone is named there.
        #expect(try store.db.scalarInt("SELECT count(*) FROM zones WHERE value IS NOT NULL AND last_seq IS NULL") == 0)
        #expect(try store.db.scalarInt("SELECT count(*) FROM zone_records") ?? 0 >= 10)
        #expect(try store.integrityCheck() == ["ok"])

        let tree = try store.value(at: .root)
        for reversed in [false, true] {
            #expect(try rebuilt(from: store, reversed: reversed).value(at: .root) == tree)
        }
        // The fixture's facts: the message under Bích's key is Bích's, the disputed one is gone.
        let messages = try store.value(at: try Path("/conversations/general/messages"))
        guard case let .object(byKey) = messages else { Issue.record("no messages"); return }
        #expect(byKey.count == 4)
        #expect(byKey["plain1"] == nil)
        #expect(byKey.values.contains { $0.value(at: try! Path("/text")) == .string("xin chào từ Bích") })
        #expect(try store.recordCount() == 19)  // and the importing user's own profile
    }

    @Test("after the migration, late older edits and newer ones fold as in a store built from scratch")
    func laterRecords() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let store = try migratedStore(in: directory)
        // A checkout does not keep the key file's mode 0600, which the loader insists on.
        let keyPath = directory.path + "/alice.key"
        try FileManager.default.copyItem(atPath: Self.fixtures + "/store-version-6-alice.key", toPath: keyPath)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: keyPath)
        let alice = try KeyFile.load(from: keyPath)
        let fresh = try rebuilt(from: store, reversed: false)

        // Alice's messages, and the clock of the newest record held.
        let messages = try store.value(at: try Path("/conversations/general/messages"))
        guard case let .object(byKey) = messages else { Issue.record("no messages"); return }
        let mine = byKey.filter { $0.value.value(at: try! Path("/senderId")) == .string(alice.publicKey.userID) }.keys.sorted()
        #expect(mine.count == 2)
        var newest: UInt64 = 0
        try store.forEachRecord { newest = max(newest, try Record.decode($0, verify: false).clock) }

        let first = try Path("/conversations/general/messages/\(mine[0])")
        let second = try Path("/conversations/general/messages/\(mine[1])")
        // The clock of the pair folded last into the first message (Alice's edit of its text).
        let lastFolded = try #require(try store.db.scalarInt(
            "SELECT clock FROM records WHERE seq = (SELECT last_seq FROM zones WHERE zone = ?)", [.text(StoreKey.of(first))]))
        let writes: [Record] = [
            // Older than every pair of the message: folded under the later ones, so hidden.
            try Record.make(body: .write([WritePair(path: try first.appending("text"), value: "too late")]), clock: 1 << 16, signer: alice),
            // Newer: extends the value.
            try Record.make(body: .write([WritePair(path: try second.appending("text"), value: "back again")]), clock: newest + 1, signer: alice),
            // Older than the edit, newer than the message: folded again in order, and it shows.
            try Record.make(body: .write([WritePair(path: try first.appending("mood"), value: "late but new")]),
                            clock: UInt64(bitPattern: lastFolded) - 1, signer: alice),
        ]
        for record in writes {
            _ = try store.ingest([record], nowMillis: farFuture)
            _ = try fresh.ingest([record], nowMillis: farFuture)
            #expect(try store.value(at: .root) == fresh.value(at: .root))
        }
        #expect(try store.value(at: try first.appending("text")) == "hello from Alice (edited)")
        #expect(try store.value(at: try first.appending("mood")) == "late but new")
        #expect(try store.value(at: try second.appending("text")) == "back again")
    }
}
