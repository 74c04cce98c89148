import Crypto
import Private
import Testing
import Tree
import Wire
@testable import Store
import TestSupport

/// Sealed writes opened ahead of storing, off the store's queue (`SealedWriteKeys`): the store
/// folds exactly what it would have folded opening them itself, and trusts an opening only when
/// it was made with the key the membership gives the epoch when the write is stored.
@Suite("Sealed writes opened ahead of storing")
struct SealedOpenAheadTests {
    let alice = testAuthors[0], bob = testAuthors[1], carol = testAuthors[2]
    let now: UInt64 = 1_700_000_000_000

    func shown(_ store: Store, _ script: GroupScript) throws -> [String: JSONValue] {
        guard case let .object(messages) = try store.shallowValue(at: try Path(segments: ["conversations", script.conversation, "messages"])) else {
            return [:]
        }
        return messages
    }

    @Test("the snapshot holds the epochs this node opens, and follows membership")
    func snapshotFollowsMembership() throws {
        let script = GroupScript(creator: alice)
        let (e1, k1) = try script.keyRecord(epoch: 1, members: [alice, bob], clock: 1 << 16)
        let store = try Store(path: ":memory:")
        #expect(store.sealedWriteKeys().isEmpty)  // no device key given
        try store.usePrivateKeys(of: bob)
        #expect(store.sealedWriteKeys().isEmpty)  // no key record yet
        _ = try store.ingest([e1], nowMillis: now)
        let keys = store.sealedWriteKeys()
        let write = try script.message(1, by: alice, epoch: e1, key: k1, clock: 2 << 16)
        #expect(keys.open(write)?.pairs?.pairs.count == 1)
        // The same answer while nothing changes; none for a node whose user is not a member.
        #expect(store.sealedWriteKeys().open(write)?.key === keys.open(write)?.key)
        try store.usePrivateKeys(of: carol)
        #expect(store.sealedWriteKeys().open(write) == nil)
    }

    @Test("a write opened ahead is folded as if the store had opened it")
    func openedAheadFolds() throws {
        let script = GroupScript(creator: alice)
        let (e1, k1) = try script.keyRecord(epoch: 1, members: [alice, bob, carol], clock: 1 << 16)
        let writes = try (0..<20).map { try script.message($0, by: $0 % 2 == 0 ? alice : carol, epoch: e1, key: k1, clock: UInt64(10 + $0) << 16) }
        let ahead = try Store(path: ":memory:"), plain = try Store(path: ":memory:")
        for store in [ahead, plain] {
            try store.usePrivateKeys(of: bob)
            _ = try store.ingest([e1], nowMillis: now)
        }
        let keys = ahead.sealedWriteKeys()
        let opened = writes.map(keys.open)
        #expect(opened.allSatisfy { $0?.pairs != nil })
        _ = try ahead.ingest(writes, opened: opened, nowMillis: now)
        _ = try plain.ingest(writes, nowMillis: now)
        #expect(try shown(ahead, script).count == 20)
        #expect(try ahead.value(at: try Path("/")) == plain.value(at: try Path("/")))
    }

    @Test("an opening made under another key than the membership's is not trusted: the store opens the write itself")
    func staleOpeningIgnored() throws {
        let script = GroupScript(creator: alice)
        let (e1, k1) = try script.keyRecord(epoch: 1, members: [alice, bob], clock: 1 << 16)
        let write = try script.message(1, by: alice, epoch: e1, key: k1, clock: 2 << 16)
        let store = try Store(path: ":memory:")
        try store.usePrivateKeys(of: bob)
        _ = try store.ingest([e1], nowMillis: now)
        // Made with another key object for the epoch (a snapshot from before the keys were
        // given again) and claiming the write did not open: the store opens it and shows it.
        let stale = OpenedSealedWrite(key: EpochKey(), pairs: nil)
        _ = try store.ingest([write], opened: [stale], nowMillis: now)
        #expect(try shown(store, script).count == 1)
    }

    @Test("a forged ciphertext opened ahead fails there, and the store shows nothing of it")
    func forgedFailsAhead() throws {
        let script = GroupScript(creator: alice)
        let (e1, k1) = try script.keyRecord(epoch: 1, members: [alice, bob], clock: 1 << 16)
        let store = try Store(path: ":memory:")
        try store.usePrivateKeys(of: bob)
        _ = try store.ingest([e1], nowMillis: now)
        let good = try script.message(1, by: alice, epoch: e1, key: k1, clock: 2 << 16)
        guard case let .sealedWrite(body) = good.body else { Issue.record("not sealed"); return }
        var ciphertext = body.ciphertext
        ciphertext[ciphertext.count - 1] ^= 1
        let forged = try Record.make(body: .sealedWrite(SealedWriteBody(conversation: body.conversation, epoch: body.epoch, ciphertext: ciphertext)),
                                     clock: 3 << 16, signer: alice)
        // Sealed by alice under the key but signed by bob, who is a member: the AD binds the author.
        let replayed = try Record.make(body: good.body, clock: 4 << 16, signer: bob)
        let keys = store.sealedWriteKeys()
        let opened = [forged, replayed].map(keys.open)
        #expect(opened.allSatisfy { $0 != nil && $0?.pairs == nil })
        let report = try store.ingest([forged, replayed], opened: opened, nowMillis: now)
        #expect(report.added == 2)  // stored and relayed like any record, shown by no one
        #expect(try shown(store, script).isEmpty)
    }
}
