import Crypto
import Private
import SQLite
import Synchronization
import Testing
import Tree
import Wire
@testable import Store
import TestSupport

/// A monotonic clock a test moves by hand, for the key trial budgets.
final class HandClock: Sendable {
    let millis = Mutex<UInt64>(0)
    func advance(by delta: UInt64) { millis.withLock { $0 += delta } }
    var now: UInt64 { millis.withLock { $0 } }
}

/// Key records found by conversation (migration 15), and their boxes tried under budgets
/// (`KeyTrialQueue`, Protocol.md §9): a member flooding key records of 1,000 boxes of random
/// bytes costs each node a bounded CPU per second and delays no other author's key records.
@Suite("Key record trials and the control index")
struct KeyTrialFloodTests {
    let alice = testAuthors[0], bob = testAuthors[1], carol = testAuthors[2]
    let now: UInt64 = 1_700_000_000_000

    /// 1,000 boxes of random bytes, sorted, shared by the junk records (each differs by its salt).
    static let junkBoxes = (0..<PrivateLimits.maxBoxes).map { _ in secureRandomBytes(PrivateLimits.boxBytes) }
        .sorted { $0.lexicographicallyPrecedes($1) }

    /// A key record of a group `author` creates (its own salt), with `boxes` boxes of random
    /// bytes: valid, signed, and opening for no one.
    static func junkKeyRecord(by author: PrivateKey, index: Int, boxes: Int = PrivateLimits.maxBoxes) throws -> Record {
        var salt = [UInt8](repeating: 0, count: PrivateLimits.saltBytes)
        for shift in 0..<8 { salt[shift] = UInt8(truncatingIfNeeded: index >> (8 * shift)) }
        let body = GroupKeyBody(conversation: ConversationID.group(creator: author.publicKey, salt: salt), epoch: 1, salt: salt,
                                boxes: Array(junkBoxes.prefix(boxes)), meta: secureRandomBytes(64))
        return try Record.make(body: .groupKey(body), clock: UInt64(1_000 + index) << 16, signer: author)
    }

    /// Steps the `Store.controlRecordsSQL` statement takes for `conversation`, and its full-scan steps.
    static func controlSteps(_ store: Store, _ conversation: String) throws -> (steps: Int, fullScan: Int, rows: Int) {
        let statement = try store.db.prepare(Store.controlRecordsSQL)
        try statement.bind([.text(conversation)])
        var rows = 0
        while try statement.step() { rows += 1 }
        return (statement.virtualMachineSteps, statement.fullScanSteps, rows)
    }

    @Test("resolving a conversation's membership reads its own key and leave records, however many other records the store holds")
    func controlIndexReadsOnlyItsOwn() throws {
        let script = GroupScript(creator: alice)
        let (e1, k1) = try script.keyRecord(epoch: 1, members: [alice, bob, carol], clock: 1 << 16)
        let store = try Store(path: ":memory:")
        try store.usePrivateKeys(of: bob)
        _ = try store.ingest([e1, try script.leave(by: carol, clock: 5 << 16)], nowMillis: now)
        let few = try Self.controlSteps(store, script.conversation)
        #expect(few.rows == 2)
        #expect(few.fullScan == 0)
        // 3,000 unrelated records: plain writes, sealed messages, key records of other groups.
        let mallory = PrivateKey()
        var unrelated = [Record]()
        for i in 0..<1_000 {
            unrelated.append(try Record.make(body: .write([WritePair(path: try Path("/notes/n\(i)"), value: .string("x"))]),
                                             clock: UInt64(10 + i) << 16, signer: carol))
            unrelated.append(try script.message(i, by: carol, epoch: e1, key: k1, clock: UInt64(10 + i) << 16))
            unrelated.append(try Self.junkKeyRecord(by: mallory, index: i, boxes: 1))
        }
        _ = try store.ingest(unrelated, nowMillis: now)
        let many = try Self.controlSteps(store, script.conversation)
        #expect(many.rows == 2)
        #expect(many.fullScan == 0)
        // A step or two more as the tables' b-trees deepen, not one per record.
        #expect(many.steps <= few.steps + 4, "steps grew from \(few.steps) to \(many.steps) with unrelated records")
        // The scan it replaces reads every key and leave record of the store.
        let scan = try store.db.prepare("SELECT bytes FROM records WHERE kind IN (?, ?)")
        try scan.bind([.integer(Int64(RecordKind.groupKey.rawValue)), .integer(Int64(RecordKind.leave.rawValue))])
        while try scan.step() {}
        #expect(scan.fullScanSteps >= 3_000)
        // The membership the index gives is the one of its records.
        #expect(try store.privateInfo(script.conversation)?.members.contains(carol.publicKey) == false)
    }

    @Test("migration 15 indexes the key and leave records already held")
    func migrationFillsIndex() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.path + "/store.sqlite"
        let script = GroupScript(creator: alice)
        let (e1, _) = try script.keyRecord(epoch: 1, members: [alice, bob], clock: 1 << 16)
        do {
            let store = try Store(path: path)
            _ = try store.ingest([e1, try script.leave(by: carol, clock: 5 << 16)], nowMillis: now)
            try store.db.execute("DROP TABLE private_control; PRAGMA user_version = 14;")
        }
        let store = try Store(path: path)
        #expect(try store.db.userVersion == Schema.latestVersion)
        #expect(try store.db.scalarInt("SELECT count(*) FROM private_control WHERE conversation = ?", [.text(script.conversation)]) == 2)
        try store.usePrivateKeys(of: bob)
        #expect(try store.privateInfo(script.conversation)?.members.sorted() == [alice.publicKey, bob.publicKey].sorted())
    }

    /// Bob's node, one author flooding `flood` key records of 1,000 random boxes, then alice
    /// adding bob to a group: how many boxes were tried before alice's group was readable.
    func floodThenHonest(flood: Int, clock: HandClock) throws -> (store: Store, group: String, boxesBefore: Int) {
        let store = try Store(path: ":memory:")
        store.keyTrialMillis = { clock.now }
        try store.usePrivateKeys(of: bob)
        let mallory = PrivateKey()
        for start in stride(from: 0, to: flood, by: 100) {
            let batch = try (start..<min(flood, start + 100)).map { try Self.junkKeyRecord(by: mallory, index: $0) }
            #expect(try store.ingest(batch, nowMillis: now).added == batch.count, "every record is stored, to be relayed")
        }
        let boxesBefore = store.boxesTried
        let script = GroupScript(creator: alice)
        let (e1, k1) = try script.keyRecord(epoch: 1, members: [alice, bob, carol], clock: 1 << 16)
        _ = try store.ingest([e1, try script.message(1, by: carol, epoch: e1, key: k1, clock: 2 << 16)], nowMillis: now)
        return (store, script.conversation, boxesBefore)
    }

    @Test("one author floods thousands of 1,000-box key records: another author's group is readable at once, whatever the flood's size, and the flood costs a bounded number of box trials a second")
    func floodDoesNotDelayOthers() throws {
        let limits = KeyTrialQueue.Limits.standard
        for flood in [200, 2_000] {
            let clock = HandClock()
            let (store, group, boxesBefore) = try floodThenHonest(flood: flood, clock: clock)
            // No time has passed: alice's group is readable with the flood waiting.
            #expect(try store.privateInfo(group) != nil, "flood of \(flood)")
            #expect(try store.value(at: try Path(segments: ["conversations", group, "messages"])) != .null)
            #expect(boxesBefore <= limits.perAuthorBurst, "the flood's first trials are its author's burst (\(boxesBefore))")
            #expect(store.waitingKeyRecords == flood - boxesBefore / PrivateLimits.maxBoxes)
            // Each second, the flood gets its author's budget and no more.
            for _ in 0..<3 {
                let before = store.boxesTried
                clock.advance(by: 1_000)
                let next = try store.tryWaitingKeyRecords()
                #expect(store.boxesTried - before <= limits.perAuthorPerSecond, "boxes tried in one second")
                #expect(store.boxesTried - before >= limits.perAuthorPerSecond - PrivateLimits.maxBoxes, "and the queue moves")
                #expect(next != nil && next! <= 1_000)
            }
            #expect(try store.db.scalarInt("SELECT count(*) FROM private_control WHERE opens IS NULL") == Int64(store.waitingKeyRecords),
                    "what waits is in the index, to be tried after a restart too")
        }
    }

    @Test("the honest author's key record arriving in the same batch after a flood is tried before the flood's tail")
    func sameBatch() throws {
        let clock = HandClock()
        let store = try Store(path: ":memory:")
        store.keyTrialMillis = { clock.now }
        try store.usePrivateKeys(of: bob)
        let mallory = PrivateKey()
        let script = GroupScript(creator: alice)
        let (e1, _) = try script.keyRecord(epoch: 1, members: [alice, bob], clock: 1 << 16)
        let batch = try (0..<50).map { try Self.junkKeyRecord(by: mallory, index: $0) } + [e1]
        _ = try store.ingest(batch, nowMillis: now)
        #expect(try store.privateInfo(script.conversation) != nil)
        #expect(store.waitingKeyRecords == 48)
    }

    @Test("records beyond the budget are never dropped: all are tried in time, and after a restart")
    func neverDropped() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.path + "/store.sqlite"
        let clock = HandClock()
        let mallory = PrivateKey()
        let script = GroupScript(creator: mallory)
        // Mallory's own group with bob in it, last of mallory's records: it waits behind them.
        let (e1, _) = try script.keyRecord(epoch: 1, members: [mallory, bob], clock: 9_000 << 16)
        do {
            let store = try Store(path: path)
            store.keyTrialMillis = { clock.now }
            try store.usePrivateKeys(of: bob)
            _ = try store.ingest(try (0..<6).map { try Self.junkKeyRecord(by: mallory, index: $0) } + [e1], nowMillis: now)
            #expect(try store.privateInfo(script.conversation) == nil, "waits behind its author's earlier records")
            #expect(store.waitingKeyRecords == 5)
        }
        // Reopened: the untried records are queued again from the index, and tried in turn.
        let store = try Store(path: path)
        store.keyTrialMillis = { clock.now }
        try store.usePrivateKeys(of: bob)
        var seconds = 0
        while store.waitingKeyRecords > 0, seconds < 10 {
            clock.advance(by: 1_000)
            seconds += 1
            _ = try store.tryWaitingKeyRecords()
        }
        #expect(store.waitingKeyRecords == 0)
        #expect(seconds <= 3, "two records a second")
        #expect(try store.privateInfo(script.conversation) != nil)
        #expect(store.takeOpenedKeyRecords().map(\.id) == [e1.id], "the node is told which conversation it opened")
    }

    @Test("a node's own key records are tried at once, whatever waits")
    func ownRecordsAtOnce() throws {
        let clock = HandClock()
        let store = try Store(path: ":memory:")
        store.keyTrialMillis = { clock.now }
        try store.usePrivateKeys(of: bob)
        _ = try store.ingest(try (0..<20).map { try Self.junkKeyRecord(by: PrivateKey(), index: $0) }, nowMillis: now)
        let group = try store.createGroup(title: "mine", members: [alice.publicKey], sharesHistory: false, signer: bob, nowMillis: now)
        #expect(try store.privateInfo(group) != nil)
    }
}
