import Crypto
import Foundation
import Private
import Testing
import Tree
import Wire
@testable import Store
import TestSupport

/// The index of sealed writes by conversation, epoch, author and clock (migration 13): a
/// membership change judges again only the writes it can change, not every sealed write.
@Suite("Sealed writes indexed for membership changes")
struct SealedWriteIndexTests {
    let alice = testAuthors[0], bob = testAuthors[1], carol = testAuthors[2], dave = try! PrivateKey(seedBytes: [UInt8](repeating: 0x44, count: 32))
    let now: UInt64 = 1_700_000_000_000

    func shown(_ store: Store, _ script: GroupScript) throws -> Int {
        guard case let .object(messages) = try store.shallowValue(at: try Path(segments: ["conversations", script.conversation, "messages"])) else {
            return 0
        }
        return messages.count
    }

    func ingest(_ store: Store, _ records: [Record]) throws {
        for start in stride(from: 0, to: records.count, by: 1_000) {
            let report = try store.ingest(Array(records[start..<min(start + 1_000, records.count)]), nowMillis: now)
            #expect(report.refused.isEmpty)
        }
    }

    @Test("at 10,000 sealed messages a membership change judges only the writes it concerns")
    func changesAt10k() throws {
        let script = GroupScript(creator: alice)
        let (e1, k1) = try script.keyRecord(epoch: 1, members: [alice, bob, carol], clock: 1 << 16)
        let writes = try (0..<10_000).map { i in
            try script.message(i, by: i % 2 == 0 ? alice : carol, epoch: e1, key: k1, clock: UInt64(100 + i) << 16)
        }
        let store = try Store(path: ":memory:")
        try store.usePrivateKeys(of: bob)
        // The messages before their key: the key record opens all of them at once.
        try ingest(store, writes)
        #expect(try shown(store, script) == 0)
        try ingest(store, [e1])
        #expect(store.judgedOnMembershipChange == 10_000)
        #expect(try shown(store, script) == 10_000)

        // Dave joins after them all: nothing of his to judge, nothing sealed in the new epoch yet.
        let (e2, k2) = try script.keyRecord(epoch: 2, members: [alice, bob, carol, dave], clock: 20_000 << 16)
        try ingest(store, [e2])
        #expect(store.judgedOnMembershipChange == 0)
        #expect(try store.privateInfo(script.conversation)?.members.contains(dave.publicKey) == true)
        try ingest(store, try (0..<3).map { try script.message(20_000 + $0, by: dave, epoch: e2, key: k2, clock: UInt64(20_001 + $0) << 16) })
        #expect(try shown(store, script) == 10_003)

        // Carol leaves, with a clock among her last messages: only her writes from that clock on
        // are judged again (25 of them), and they stop counting.
        try ingest(store, [try script.leave(by: carol, clock: 10_050 << 16)])
        #expect(store.judgedOnMembershipChange == 25)
        #expect(try shown(store, script) == 10_003 - 25)
        // A later leave of hers changes nothing and is not resolved.
        try ingest(store, [try script.leave(by: carol, clock: 10_080 << 16)])
        #expect(store.judgedOnMembershipChange == 25)
        #expect(try shown(store, script) == 10_003 - 25)
    }

    @Test("migration 13 indexes the sealed writes a store already holds")
    func migrationIndexes() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("lanchat-sealed-index-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("store.sqlite").path
        let script = GroupScript(creator: alice)
        let (e1, k1) = try script.keyRecord(epoch: 1, members: [alice, bob], clock: 1 << 16)
        let (e2, k2) = try script.keyRecord(epoch: 2, members: [alice, bob, dave], clock: 500 << 16)
        // Dave's messages in epoch 2 arrive before its key record.
        let early = try (0..<50).map { try script.message($0, by: alice, epoch: e1, key: k1, clock: UInt64(10 + $0) << 16) }
        let daves = try (0..<20).map { try script.message(100 + $0, by: dave, epoch: e2, key: k2, clock: UInt64(600 + $0) << 16) }
        do {
            let store = try Store(path: path)
            try store.usePrivateKeys(of: bob)
            try ingest(store, [e1] + early + daves)
            #expect(try shown(store, script) == 50)
            // As a store of migration 12 had it: no index.
            try store.db.execute("DROP TABLE sealed_writes; PRAGMA user_version = 12;")
        }
        let store = try Store(path: path)
        try store.usePrivateKeys(of: bob)
        #expect(try store.db.scalarInt("SELECT count(*) FROM sealed_writes") == 70)
        #expect(try store.db.scalarInt("PRAGMA user_version") == 15)
        try ingest(store, [e2])
        #expect(store.judgedOnMembershipChange == 20)
        #expect(try shown(store, script) == 70)
    }
}
