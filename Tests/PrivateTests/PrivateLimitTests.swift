import Crypto
import Private
import Testing
@testable import Wire

/// The limits of private conversations (Protocol.md §9, §11), at the limit and just past it.
@Suite("Private limits")
struct PrivateLimitTests {
    let alice = Fixture.alice

    func keyBody(boxes: Int) -> GroupKeyBody {
        let key = EpochKey()
        let meta = GroupMeta(title: "t", members: [alice.id])
        let devices = (0..<boxes).map { _ in X25519PrivateKey().publicKey }
        return KeySchedule.makeKeyBody(conversation: Fixture.group, epoch: 1, salt: Fixture.salt, key: key, meta: meta,
                                       author: alice.id, recipients: devices)
    }

    @Test("a key record holds 1 to 1,000 sealed keys")
    func boxesPerKeyRecord() throws {
        let atLimit = try Record.make(body: .groupKey(keyBody(boxes: PrivateLimits.maxBoxes)), clock: 1, signer: alice.key)
        #expect(try Record.decode(atLimit.encoded) == atLimit)
        #expect(throws: RecordError.self) { _ = try Record.make(body: .groupKey(keyBody(boxes: PrivateLimits.maxBoxes + 1)), clock: 1, signer: alice.key) }
        #expect(throws: RecordError.self) { _ = try Record.make(body: .groupKey(keyBody(boxes: 0)), clock: 1, signer: alice.key) }
    }

    @Test("a key record's epoch number is 1 to 4,096: a signed one past it is refused on decoding, as every node receives it")
    func epochNumbers() throws {
        func body(epoch: UInt64) -> GroupKeyBody {
            let meta = GroupMeta(title: "t", members: [alice.id])
            return KeySchedule.makeKeyBody(conversation: Fixture.group, epoch: epoch, salt: Fixture.salt, key: EpochKey(), meta: meta,
                                           author: alice.id, recipients: [alice.deviceKey])
        }
        let atLimit = try Record.make(body: .groupKey(body(epoch: PrivateLimits.maxEpoch)), clock: 1 << 16, signer: alice.key)
        #expect(try Record.decode(atLimit.encoded) == atLimit)
        #expect(Membership(conversation: Fixture.group, records: [atLimit], device: alice.device).writableEpoch(for: alice.id) != nil)
        #expect(throws: RecordError.self) { _ = try Record.make(body: .groupKey(body(epoch: PrivateLimits.maxEpoch + 1)), clock: 1 << 16, signer: alice.key) }
        // What a hostile creator would send: well signed, past the limit.
        let past = RecordBody.groupKey(body(epoch: PrivateLimits.maxEpoch + 1))
        let unsigned = RecordCodec.unsignedBytes(author: alice.id, clock: 1 << 16, body: past)
        let signature = try alice.key.sign(Record.signingDomain + unsigned)
        let bytes = RecordCodec.encode(author: alice.id, clock: 1 << 16, body: past, signature: signature)
        #expect(throws: RecordError.invalidBody("a key record's epoch is 1...\(PrivateLimits.maxEpoch)")) { _ = try Record.decode(bytes) }
    }

    @Test("one key record counts per author and epoch number: the first in write order; a flood of the same number changes nothing")
    func oneKeyRecordPerEpochNumber() throws {
        let bob = Fixture.bob, carol = Fixture.carol, dave = Fixture.dave
        let (e1, _) = try Fixture.keyRecord(alice, epoch: 1, members: [alice, bob], clock: 1 << 16)
        let (first, _) = try Fixture.keyRecord(alice, epoch: 2, members: [alice, bob, carol], clock: 3 << 16)
        var later = [Record]()
        for i in 0..<50 {
            later.append(try Fixture.keyRecord(alice, epoch: 2, members: [alice, bob, dave], clock: UInt64(4 + i) << 16).0)
        }
        // Whatever the order they are given in, the first of epoch 2 is the current epoch.
        for records in [[e1, first] + later, later.reversed() + [first, e1]] {
            let view = Membership(conversation: Fixture.group, records: records, device: bob.device)
            #expect(view.epochs.map(\.id) == [e1.id, first.id])
            #expect(view.currentMembers == [alice.id, bob.id, carol.id])
            #expect(Membership(conversation: Fixture.group, records: records, device: dave.device).opened.isEmpty)
        }
        // An earlier record of the same number, arriving last, takes the place of the first.
        let (earlier, _) = try Fixture.keyRecord(alice, epoch: 2, members: [alice, bob, dave], clock: 2 << 16)
        let view = Membership(conversation: Fixture.group, records: [e1, first, earlier] + later, device: bob.device)
        #expect(view.currentMembers == [alice.id, bob.id, dave.id])
        // A direct conversation's two members each key it: one record of each counts.
        let direct = ConversationID.direct(alice.id, bob.id)
        let (fromAlice, _) = try Fixture.keyRecord(alice, direct, epoch: 1, members: [alice, bob], title: "", salt: bob.id.bytes, clock: 1 << 16)
        let (fromBob, _) = try Fixture.keyRecord(bob, direct, epoch: 1, members: [alice, bob], title: "", salt: alice.id.bytes, clock: 2 << 16)
        #expect(Membership(conversation: direct, records: [fromAlice, fromBob], device: bob.device).epochs.count == 2)
    }

    @Test("a title is at most 256 bytes; an epoch with a longer one is not opened")
    func titleBytes() throws {
        let at = GroupMeta(title: String(repeating: "é", count: 128), members: [alice.id])
        #expect(try GroupMeta.decode(at.encoded()) == at)
        let past = GroupMeta(title: String(repeating: "é", count: 128) + "x", members: [alice.id])
        #expect(throws: PrivateError.self) { _ = try GroupMeta.decode(past.encoded()) }
        for (title, opens) in [(at.title, true), (past.title, false)] {
            let (record, _) = try Fixture.keyRecord(alice, epoch: 1, members: [alice], title: title, clock: 1 << 16)
            #expect((Membership(conversation: Fixture.group, records: [record], device: alice.device).opened.count == 1) == opens)
        }
    }
}
