import Crypto
import Private
import Testing
import Wire

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
