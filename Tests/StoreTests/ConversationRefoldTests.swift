import Crypto
import Private
import SQLite
import Testing
import Tree
import Wire
@testable import Store
import TestSupport

/// A write that stops counting (a backdated removal or leave) folds again only its
/// conversation's subtree (`Store.refoldConversation`), and the tree it leaves is the one a
/// whole refold gives.
@Suite("Conversation refolds")
struct ConversationRefoldTests {
    let alice = testAuthors[0], bob = testAuthors[1], carol = testAuthors[2], dave = try! PrivateKey(seedBytes: [UInt8](repeating: 0x44, count: 32))
    let now: UInt64 = 1_700_000_000_000

    /// Everything the fold writes, in a form two stores (or one store twice) can compare.
    static func dump(_ store: Store) throws -> [String] {
        var lines = [String]()
        try store.db.query("SELECT path, kind, \(LeafValue.column), hex(ord) FROM leaves ORDER BY path") { row in
            lines.append("leaf \(row.text(0)) \(LeafValue.decode(kind: row.int64(1), row: row, column: 2)) \(row.text(3))")
        }
        try store.db.query("SELECT path, hex(ord), hex(ord_set) FROM cuts ORDER BY path") { row in
            lines.append("cut \(row.text(0)) \(row.text(1)) \(row.isNull(2) ? "-" : row.text(2))")
        }
        try store.db.query("SELECT zone, hex(owner), \(ZoneStore.valueColumns) FROM zones ORDER BY zone") { row in
            let zone = Zone.of(try StoreKey.path(row.text(0)))
            lines.append("zone \(row.text(0)) \(row.text(1)) \(try ZoneStore.storedValue(row, column: 2, zone: zone))")
        }
        try store.db.query("SELECT path, hex(key) FROM sealed_file_keys ORDER BY path, key") { row in
            lines.append("file key \(row.text(0)) \(row.text(1))")
        }
        try store.db.query("SELECT ord, hex(value), hex(key) FROM zone_order_rows ORDER BY ord, value, key") { row in
            lines.append("order \(row.int64(0)) \(row.text(1)) \(row.text(2))")
        }
        return lines
    }

    /// A sealed message, sometimes with a photo (so its key lands in `sealed_file_keys`).
    func message(_ script: GroupScript, _ index: Int, by author: PrivateKey, epoch: Record, key: EpochKey, clock: UInt64,
                 photo: Bool) throws -> Record {
        let uid = author.publicKey.userID
        let messageKey = MessageKey.bind("-r" + String(repeating: "0", count: 18 - String(index).count) + String(index), to: uid)
        var fields: [String: JSONValue] = ["senderId": .string(uid), "text": .string("m\(index)"), "date": .number(Double(index))]
        if photo {
            fields["photoURL"] = .string("images/\(uid)_\(messageKey).jpg")
            fields["photoKey"] = .string(SealedFile.encodeKey(SealedFile.makeKey()))
        }
        let path = try Path(segments: ["conversations", script.conversation, "messages", messageKey])
        let body = try KeySchedule.sealWrite([WritePair(path: path, value: .object(fields))], conversation: script.conversation,
                                             epoch: epoch.id, key: key, author: author.publicKey)
        return try Record.make(body: .sealedWrite(body), clock: clock, signer: author)
    }

    /// A random history of one group: epochs with random members (this node's user `bob` in
    /// most), messages by random people in random epochs, leaves, all at random clocks.
    func history(_ script: GroupScript, seed: UInt64, rng: inout SplitMix64) throws -> [Record] {
        let people = [alice, bob, carol, dave]
        var records = [Record]()
        var epochs = [(Record, EpochKey)]()
        for epoch in 1...UInt64(2 + rng.next() % 4) {
            var members = [alice] + people.dropFirst().filter { _ in rng.next() % 3 != 0 }
            if epoch == 1, !members.contains(where: { $0.publicKey == bob.publicKey }) { members.append(bob) }
            let made = try script.keyRecord(epoch: epoch, members: members, clock: (epoch * 100 + rng.next() % 150) << 16)
            records.append(made.record)
            epochs.append(made)
        }
        for index in 0..<Int(20 + rng.next() % 30) {
            let (epoch, key) = epochs[Int(rng.next() % UInt64(epochs.count))]
            let author = people[Int(rng.next() % 4)]
            records.append(try message(script, index, by: author, epoch: epoch, key: key, clock: (rng.next() % 700) << 16,
                                       photo: rng.next() % 4 == 0))
        }
        for person in [carol, dave] where rng.next() % 2 == 0 {
            records.append(try script.leave(by: person, clock: (rng.next() % 700) << 16))
        }
        return records
    }

    @Test("random membership histories: the tree after refolding one conversation equals a whole refold, the rest untouched", arguments: 0..<24)
    func matchesWholeRefold(seed: Int) throws {
        var rng = SplitMix64(seed: UInt64(seed) &+ 0x5EED)
        let script = GroupScript(creator: alice)
        // A second group and plain writes beside it: left as they are.
        let other = OtherGroup(creator: carol)
        let (o1, ok1) = try other.script.keyRecord(epoch: 1, members: [carol, bob], clock: 1 << 16)
        var records = try history(script, seed: UInt64(seed), rng: &rng)
        records += [o1] + (try (0..<10).map { try other.script.message($0, by: carol, epoch: o1, key: ok1, clock: UInt64(10 + $0) << 16) })
        records += try (0..<10).map { i in
            try Record.make(body: .write([WritePair(path: try Path("/notes/n\(i)"), value: .string("note \(i)"))]), clock: UInt64(i + 1) << 16, signer: dave)
        }
        records.shuffle(using: &rng)

        let store = try Store(path: ":memory:")
        try store.usePrivateKeys(of: bob)
        let opened = store.wholeRefolds  // a new store folds its (empty) tree once, as migration 6 asks
        _ = try store.transaction { try store.db.run("INSERT INTO zone_orders(list, field) VALUES (?, '/date')",
                                                    [.text(StoreKey.of(try Path(segments: ["conversations", script.conversation, "messages"])))]) }
        for record in records { #expect(try store.ingest([record], nowMillis: now).added == 1) }
        #expect(store.wholeRefolds == opened, "no change folds the whole tree again")
        let incremental = try Self.dump(store)
        try store.transaction { try store.refoldEverything() }
        let whole = try Self.dump(store)
        #expect(incremental == whole)
        if incremental != whole {
            let a = Set(incremental), b = Set(whole)
            Issue.record("only incremental: \(a.subtracting(b).sorted().prefix(8)); only whole: \(b.subtracting(a).sorted().prefix(8))")
        }
    }

    @Test("across the random histories some writes stopped counting, each folding its own conversation again")
    func refoldsHappen() throws {
        var refolds = 0
        for seed in 0..<12 {
            var rng = SplitMix64(seed: UInt64(seed) &+ 0x5EED)
            let script = GroupScript(creator: alice)
            var records = try history(script, seed: UInt64(seed), rng: &rng)
            records.shuffle(using: &rng)
            let store = try Store(path: ":memory:")
            try store.usePrivateKeys(of: bob)
            let opened = store.wholeRefolds
            for record in records { _ = try store.ingest([record], nowMillis: now) }
            refolds += store.conversationRefolds
            #expect(store.wholeRefolds == opened)
        }
        #expect(refolds > 0, "the histories exercise the refold")
    }

    @Test("a backdated removal refolds the conversation without reading the other conversations' records")
    func backdatedRemoval() throws {
        let script = GroupScript(creator: alice)
        let (e1, k1) = try script.keyRecord(epoch: 1, members: [alice, bob, carol], clock: 1 << 16)
        let store = try Store(path: ":memory:")
        try store.usePrivateKeys(of: bob)
        let opened = store.wholeRefolds
        _ = try store.ingest([e1, try script.message(1, by: carol, epoch: e1, key: k1, clock: 50 << 16)], nowMillis: now)
        // 2,000 messages of another group this node reads: untouched by the refold below.
        let other = OtherGroup(creator: dave)
        let (o1, ok1) = try other.script.keyRecord(epoch: 1, members: [dave, bob], clock: 1 << 16)
        _ = try store.ingest([o1] + (0..<2_000).map { try other.script.message($0, by: dave, epoch: o1, key: ok1, clock: UInt64(10 + $0) << 16) },
                             nowMillis: now)
        let messages = try Path(segments: ["conversations", script.conversation, "messages"])
        guard case let .object(before)? = Optional(try store.value(at: messages)) else { Issue.record("no messages"); return }
        #expect(before.count == 1)
        // Epoch 2 without carol, stamped before carol's message: it no longer counts.
        let (e2, _) = try script.keyRecord(epoch: 2, members: [alice, bob], clock: 20 << 16)
        _ = try store.ingest([e2], nowMillis: now)
        #expect(store.conversationRefolds == 1)
        #expect(store.wholeRefolds == opened)
        #expect(try store.value(at: messages) == .null)
        guard case let .object(others) = try store.value(at: try Path(segments: ["conversations", other.script.conversation, "messages"])) else {
            Issue.record("the other group's messages are gone"); return
        }
        #expect(others.count == 2_000)
    }
}

/// A group script with a salt of its own, for a second group.
struct OtherGroup {
    let script: GroupScript
    init(creator: PrivateKey) { script = GroupScript(creator: creator, salt: [UInt8](repeating: 0x77, count: 32)) }
}
