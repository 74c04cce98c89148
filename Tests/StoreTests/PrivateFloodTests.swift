import Crypto
import Foundation
import Private
import Testing
import Tree
import Wire
@testable import Store
import TestSupport

/// A hostile creator or member flooding a member's node with key and leave records, each well
/// signed: what counts is bounded (Protocol.md §9, §11.5), and the flood does not grow the
/// work of each record with the records already stored.
@Suite("Private record floods")
struct PrivateFloodTests {
    let alice = testAuthors[0], bob = testAuthors[1], carol = testAuthors[2], dave = try! PrivateKey(seedBytes: [UInt8](repeating: 0x44, count: 32))
    let now: UInt64 = 1_700_000_000_000

    @Test("thousands of key records of one epoch number: the first counts, the rest are neither kept in memory nor resolved")
    func keyRecordFlood() throws {
        let script = GroupScript(creator: alice)
        let (e1, k1) = try script.keyRecord(epoch: 1, members: [alice, bob, carol], clock: 1 << 16)
        let store = try Store(path: ":memory:")
        try store.usePrivateKeys(of: bob)
        _ = try store.ingest([e1] + (0..<100).map { try script.message($0, by: carol, epoch: e1, key: k1, clock: UInt64(10 + $0) << 16) },
                             nowMillis: now)
        // 2,000 epochs numbered 2, each a record of its own as a peer would push them; the one
        // with the lowest clock arrives in the middle.
        var flood = try (0..<2_000).map { i in try script.keyRecord(epoch: 2, members: [alice, bob, dave], clock: UInt64(1_000 + i) << 16).record }
        let (first, _) = try script.keyRecord(epoch: 2, members: [alice, bob, carol, dave], clock: 999 << 16)
        flood.insert(first, at: 1_000)
        let clock = ContinuousClock()
        var slowest = Duration.zero
        for record in flood {
            let start = clock.now
            let added = try store.ingest([record], nowMillis: now).added
            slowest = max(slowest, clock.now - start)
            #expect(added == 1)
        }
        #expect(try store.recordCount() == 1 + 100 + 2_001, "every record is stored, to be relayed")
        #expect(store.privateControl?[script.conversation]?.count == 2, "one key record per epoch number kept")
        let info = try #require(try store.privateInfo(script.conversation))
        #expect(Set(info.members) == [alice.publicKey, bob.publicKey, carol.publicKey, dave.publicKey])
        #expect(try store.value(at: try Path(segments: ["conversations", script.conversation, "meta", "members", dave.publicKey.userID])) == true)
        #expect(slowest < .seconds(1), "slowest key record took \(slowest)")

        // A node of the group's epoch 1 only holds nothing of epoch 2: it tries the boxes of
        // the first record of that number it sees, and of an earlier one, never of a later one.
        let outsider = try Store(path: ":memory:")
        try outsider.usePrivateKeys(of: PrivateKey())
        for record in [e1] + flood { _ = try outsider.ingest([record], nowMillis: now) }
        #expect(outsider.keyRecordsTried == 1 + 1 + 1, "e1, the first of epoch 2 to arrive, and the earlier one")
        #expect(outsider.boxKeys.isEmpty, "what opened nothing is kept in the index, not in memory")
        #expect(try outsider.privateInfo(script.conversation) == nil)

        // Leaves of 1,000 strangers (anyone can sign one): kept once per author, no resolution each.
        let strangers = (0..<1_000).map { _ in PrivateKey() }
        for stranger in strangers {
            #expect(try store.ingest([try script.leave(by: stranger, clock: 5_000 << 16)], nowMillis: now).added == 1)
        }
        #expect(try store.membership(of: script.conversation).currentMembers?.count == 4)
        // A member's own repeated leaves: the earliest counts, once.
        for i in 0..<100 {
            _ = try store.ingest([try script.leave(by: carol, clock: UInt64(6_000 - i) << 16)], nowMillis: now)
        }
        #expect(store.privateControl?[script.conversation]?.filter { $0.author == carol.publicKey }.count == 1)
        #expect(try store.privateInfo(script.conversation)?.members.contains(carol.publicKey) == false)
        #expect(try store.value(at: try Path(segments: ["conversations", script.conversation, "messages"])) != .null)
    }
}
