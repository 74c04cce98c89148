import Crypto
import Foundation
import Private
import Testing
import Tree
import Wire
@testable import Store
import TestSupport

/// Private conversations in real stores: members' trees show them, a non-member's store keeps
/// and can relay their records but shows nothing and holds no plaintext (Protocol.md §11).
@Suite("Private conversations in the store")
struct PrivateStoreTests {
    let alice = testAuthors[0], bob = testAuthors[1], carol = testAuthors[2]
    let now: UInt64 = 1_700_000_000_000

    func store(for user: PrivateKey, at path: String = ":memory:") throws -> Store {
        let store = try Store(path: path)
        try store.usePrivateKeys(of: user)
        return store
    }

    func allRecords(_ store: Store) throws -> [Record] {
        try store.records(after: 0, limit: 100_000).map { try Record.decode($0.bytes) }
    }

    func messages(_ store: Store, _ cid: String) throws -> JSONValue {
        try store.value(at: try Path("/conversations/\(cid)/messages"))
    }

    @Test("a member reads the group, a non-member's store keeps the records and shows nothing, plaintext nowhere in its files")
    func membersOnly() throws {
        let a = try store(for: alice)
        let cid = try a.createGroup(title: "Secret plans", members: [bob.publicKey], sharesHistory: false, signer: alice, nowMillis: now)
        let text = "meet at the old mill at noon"
        let (key, _) = try a.push(try Path("/conversations/\(cid)/messages"),
                                  value: ["senderId": .string(alice.publicKey.userID), "text": .string(text)], signer: alice, nowMillis: now + 1)
        #expect(try a.value(at: try Path("/conversations/\(cid)/messages/\(key)/text")) == .string(text))
        let records = try allRecords(a)
        #expect(records.map(\.kind) == [.groupKey, .sealedWrite])

        let b = try store(for: bob)
        _ = try b.ingest(records.reversed(), nowMillis: now)  // the message before its key
        #expect(try b.value(at: try Path("/conversations/\(cid)/messages/\(key)/text")) == .string(text))
        #expect(try b.value(at: try Path("/conversations/\(cid)/meta/title")) == "Secret plans")
        #expect(try b.value(at: try Path("/conversations/\(cid)/meta/private")) == true)
        #expect(try b.value(at: try Path("/conversations/\(cid)/meta/members")) ==
                .object([alice.publicKey.userID: true, bob.publicKey.userID: true]))

        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("lanchat-private-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        do {
            let c = try store(for: carol, at: directory.appendingPathComponent("store.sqlite").path)
            #expect(try c.ingest(records, nowMillis: now).added == 2)
            #expect(try c.value(at: try Path("/conversations/\(cid)")) == .null)
            #expect(try c.value(at: .root) == .null)
            #expect(try c.recordCount() == 2, "a non-member keeps the records, to relay them")
            #expect(throws: StoreError.self) {
                try c.push(try Path("/conversations/\(cid)/messages"), value: ["senderId": .string(carol.publicKey.userID), "text": "hi"],
                           signer: carol, nowMillis: now + 2)
            }
            #expect(try c.privateInfo(cid) == nil)
            for name in try FileManager.default.contentsOfDirectory(atPath: directory.path) {
                let bytes = [UInt8](try Data(contentsOf: directory.appendingPathComponent(name)))
                #expect(!bytes.windowsContain(Array(text.utf8)), "\(name) holds the plaintext")
                #expect(!bytes.windowsContain(Array("Secret plans".utf8)), "\(name) holds the title")
            }
        }
    }

    @Test("a plain write into a private conversation takes no effect, nor can a member forge another's message")
    func hostileWrites() throws {
        let a = try store(for: alice)
        let cid = try a.createGroup(title: "t", members: [bob.publicKey, carol.publicKey], sharesHistory: false, signer: alice, nowMillis: now)
        let plain = try Record.make(body: .write([WritePair(path: try Path("/conversations/\(cid)/messages/x"),
                                                            value: ["senderId": .string(carol.publicKey.userID), "text": "plain"])]),
                                    clock: (now + 5) << 16, signer: carol)
        let overRoot = try Record.make(body: .write([WritePair(path: try Path("/conversations"),
                                                               value: .object([cid: ["meta": ["title": "hijacked"]], "open": ["a": 1]])) ]),
                                       clock: (now + 6) << 16, signer: carol)
        // Bob seals a message claiming to be alice's.
        let membership = try a.membership(of: cid)
        let (epoch, open) = membership.writableEpoch(for: alice.publicKey)!
        let forged = try Record.make(body: .sealedWrite(try KeySchedule.sealWrite(
            [WritePair(path: try Path("/conversations/\(cid)/messages/f"), value: ["senderId": .string(alice.publicKey.userID), "text": "I owe bob"])],
            conversation: cid, epoch: epoch.id, key: open.key, author: bob.publicKey)), clock: (now + 7) << 16, signer: bob)
        _ = try a.ingest([plain, overRoot, forged], nowMillis: now)
        #expect(try messages(a, cid) == .null)
        #expect(try a.value(at: try Path("/conversations/\(cid)/meta/title")) == "t")
        #expect(try a.value(at: try Path("/conversations/open/a")) == 1, "the public part of the write counts")
    }

    @Test("after a removal the removed member's later writes have no effect, whichever arrives first")
    func removal() throws {
        let a = try store(for: alice)
        let cid = try a.createGroup(title: "t", members: [bob.publicKey, carol.publicKey], sharesHistory: false, signer: alice, nowMillis: now)
        let b = try store(for: bob)
        _ = try b.ingest(try allRecords(a), nowMillis: now)
        try b.set(try Path("/conversations/\(cid)/messages/early"), to: ["senderId": .string(bob.publicKey.userID), "text": "before"],
                  signer: bob, nowMillis: now + 10)
        _ = try a.ingest(try allRecords(b), nowMillis: now)
        try a.changeMembers(cid, adding: [], removing: [bob.publicKey], signer: alice, nowMillis: now + 20)
        // Bob has not heard of it yet and writes again, later.
        try b.set(try Path("/conversations/\(cid)/messages/late"), to: ["senderId": .string(bob.publicKey.userID), "text": "after"],
                  signer: bob, nowMillis: now + 30)
        try a.set(try Path("/conversations/\(cid)/messages/news"), to: ["senderId": .string(alice.publicKey.userID), "text": "bob is out"],
                  signer: alice, nowMillis: now + 40)
        let everything = Array(Set(try allRecords(a) + allRecords(b))).sorted { $0.order < $1.order }
        var expected: JSONValue?
        var rng = SplitMix64(seed: 7)
        // The removal arriving after bob's late write: the write counted, and must stop counting.
        let removalFirst = everything.firstIndex { if case let .groupKey(k) = $0.body { return k.epoch == 2 } else { return false } }!
        var removalLast = everything
        removalLast.append(removalLast.remove(at: removalFirst))
        for order in [everything, everything.reversed(), everything.shuffled(using: &rng), removalLast] {
            let c = try store(for: carol)
            for record in order { _ = try c.ingest([record], nowMillis: now + 100) }
            let shown = try messages(c, cid)
            #expect(Set(shown.objectKeys) == ["early", "news"])
            if let expected { #expect(shown == expected) }
            expected = shown
            #expect(try c.value(at: try Path("/conversations/\(cid)/meta/members")) ==
                    .object([alice.publicKey.userID: true, carol.publicKey.userID: true]))
        }
        // Bob receives everything but reads nothing sent after his removal.
        _ = try b.ingest(everything, nowMillis: now + 100)
        #expect(Set(try messages(b, cid).objectKeys) == ["early"])
        #expect(throws: StoreError.self) {
            try b.set(try Path("/conversations/\(cid)/messages/again"), to: ["senderId": .string(bob.publicKey.userID), "text": "x"],
                      signer: bob, nowMillis: now + 50)
        }
    }

    @Test("a direct conversation: the same id from both sides, each reads the other; a store reopened shows it again")
    func direct() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("lanchat-private-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("store.sqlite").path
        let a = try store(for: alice)
        let cid = try a.openDirect(with: bob.publicKey, signer: alice, nowMillis: now)
        #expect(cid == ConversationID.direct(bob.publicKey, alice.publicKey))
        #expect(try a.openDirect(with: bob.publicKey, signer: alice, nowMillis: now + 1) == cid)
        #expect(try allRecords(a).count == 1, "keyed once")
        try a.set(try Path("/conversations/\(cid)/messages/m1"), to: ["senderId": .string(alice.publicKey.userID), "text": "psst"],
                  signer: alice, nowMillis: now + 2)
        do {
            let b = try Store(path: path)  // records arrive before the key is given
            _ = try b.ingest(try allRecords(a), nowMillis: now)
            #expect(try messages(b, cid) == .null)
            try b.usePrivateKeys(of: bob)
            #expect(try b.value(at: try Path("/conversations/\(cid)/messages/m1/text")) == "psst")
            #expect(try b.openDirect(with: alice.publicKey, signer: bob, nowMillis: now + 3) == cid)
            try b.set(try Path("/conversations/\(cid)/messages/m2"), to: ["senderId": .string(bob.publicKey.userID), "text": "yes?"],
                      signer: bob, nowMillis: now + 4)
        }
        let reopened = try store(for: bob, at: path)
        #expect(Set(try messages(reopened, cid).objectKeys) == ["m1", "m2"])
        #expect(try reopened.privateInfo(cid)?.members == [alice.publicKey, bob.publicKey].sorted())
        let summary = try reopened.conversationSummary(cid, me: bob.publicKey.userID)
        #expect(summary?.isPrivate == true && summary?.with == alice.publicKey.userID, "the list marks it private and names the other member")
        #expect(try reopened.conversationSummary("general", me: bob.publicKey.userID)?.isPrivate != true)
    }
}

extension PrivateStoreTests {
    @Test("key records of groups this node is not in are stored but not kept in memory, and change nothing")
    func othersGroupsCostNothing() throws {
        let c = try store(for: carol)
        let strangers = try store(for: bob)
        var records = [Record]()
        for i in 0..<20 {
            let cid = try strangers.createGroup(title: "g\(i)", members: [alice.publicKey], sharesHistory: false, signer: bob, nowMillis: now + UInt64(i))
            try strangers.set(try Path("/conversations/\(cid)/messages/m"), to: ["senderId": .string(bob.publicKey.userID), "text": "x"],
                              signer: bob, nowMillis: now + 100)
        }
        records = try allRecords(strangers)
        _ = try c.ingest(records, nowMillis: now + 200)
        #expect(try c.recordCount() == 40)
        #expect(try c.controlRecords().isEmpty, "nothing kept for groups carol holds no key of")
        #expect(try c.value(at: .root) == .null)
        // Carol's own group, and a forged epoch of it by bob: only alice's counts.
        let a = try store(for: alice)
        let cid = try a.createGroup(title: "mine", members: [carol.publicKey], sharesHistory: false, signer: alice, nowMillis: now)
        _ = try c.ingest(try allRecords(a), nowMillis: now + 200)
        #expect(try c.controlRecords().keys.sorted() == [cid])
        let forged = KeySchedule.makeKeyBody(conversation: cid, epoch: 9, salt: [UInt8](repeating: 0x5A, count: 32), key: EpochKey(),
                                             meta: GroupMeta(title: "taken", members: [bob.publicKey, carol.publicKey]),
                                             author: bob.publicKey, recipients: [try carol.publicKey.x25519()])
        _ = try c.ingest([try Record.make(body: .groupKey(forged), clock: (now + 300) << 16, signer: bob)], nowMillis: now + 400)
        #expect(try c.value(at: try Path("/conversations/\(cid)/meta/title")) == "mine")
        #expect(try c.controlRecords()[cid]?.count == 1)
    }
}

extension JSONValue {
    var objectKeys: [String] {
        guard case let .object(members) = self else { return [] }
        return Array(members.keys)
    }
}

extension Array where Element == UInt8 {
    func windowsContain(_ needle: [UInt8]) -> Bool {
        guard !needle.isEmpty, needle.count <= count else { return false }
        let first = needle[0]
        var i = 0
        while i <= count - needle.count {
            if self[i] == first, Array(self[i..<(i + needle.count)]) == needle { return true }
            i += 1
        }
        return false
    }
}
