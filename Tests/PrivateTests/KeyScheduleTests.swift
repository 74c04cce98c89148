import Crypto
import Private
import Testing
import Tree
import Wire

@Suite("Private: ids, sealing and padding")
struct KeyScheduleTests {
    let alice = Fixture.alice, bob = Fixture.bob, carol = Fixture.carol

    @Test("a direct conversation's id is the same from either side; a group's binds its creator")
    func ids() throws {
        #expect(ConversationID.direct(alice.id, bob.id) == ConversationID.direct(bob.id, alice.id))
        #expect(ConversationID.direct(alice.id, bob.id) != ConversationID.direct(alice.id, carol.id))
        let cid = ConversationID.group(creator: alice.id, salt: Fixture.salt)
        #expect(cid.hasPrefix("g_") && cid.utf8.count == 22 && Key.isValid(cid))
        #expect(ConversationID.isPrivate(cid) && !ConversationID.isPrivate("general"))
        let meta = GroupMeta(title: "t", members: [alice.id])
        let body = KeySchedule.makeKeyBody(conversation: cid, epoch: 1, salt: Fixture.salt, key: EpochKey(), meta: meta,
                                           author: alice.id, recipients: [alice.deviceKey])
        #expect(ConversationID.mayKey(body, author: alice.id))
        #expect(!ConversationID.mayKey(body, author: bob.id), "only the creator keys a group")
        let dm = ConversationID.direct(alice.id, bob.id)
        let dmBody = KeySchedule.makeKeyBody(conversation: dm, epoch: 1, salt: bob.id.bytes, key: EpochKey(),
                                             meta: GroupMeta(title: "", members: [alice.id, bob.id]), author: alice.id,
                                             recipients: [alice.deviceKey, bob.deviceKey])
        #expect(ConversationID.mayKey(dmBody, author: alice.id))
        #expect(!ConversationID.mayKey(dmBody, author: carol.id))
    }

    @Test("a member opens a sealed write; a wrong key, another author or a changed byte does not")
    func sealAndOpen() throws {
        let key = EpochKey()
        let epoch = BLAKE2b.digest256([1, 2, 3])
        let path = try Path("/conversations/\(Fixture.group)/messages/m1")
        let pairs = [WritePair(path: path, value: .object(["senderId": .string(alice.id.userID), "text": "secret words"]))]
        let body = try KeySchedule.sealWrite(pairs, conversation: Fixture.group, epoch: epoch, key: key, author: alice.id)
        #expect(try KeySchedule.openWrite(body, key: key, author: alice.id) == pairs)
        #expect(throws: PrivateError.undecryptable) { try KeySchedule.openWrite(body, key: EpochKey(), author: alice.id) }
        #expect(throws: PrivateError.undecryptable) { try KeySchedule.openWrite(body, key: key, author: bob.id) }
        var changed = body.ciphertext
        changed[changed.count / 2] ^= 1
        let tampered = SealedWriteBody(conversation: body.conversation, epoch: epoch, ciphertext: changed)
        #expect(throws: PrivateError.undecryptable) { try KeySchedule.openWrite(tampered, key: key, author: alice.id) }
        let otherEpoch = SealedWriteBody(conversation: body.conversation, epoch: BLAKE2b.digest256([9]), ciphertext: body.ciphertext)
        #expect(throws: PrivateError.undecryptable) { try KeySchedule.openWrite(otherEpoch, key: key, author: alice.id) }
        #expect(!body.ciphertext.windowsContain(Array("secret words".utf8)))
    }

    @Test("a sealed write cannot reach outside its conversation")
    func staysInside() throws {
        for outside in ["/users/x/first_name", "/conversations/general/messages/m", "/conversations/\(Fixture.group)"] {
            let pairs = [WritePair(path: try Path(outside), value: "v")]
            #expect(throws: PrivateError.outsideConversation(try Path(outside).description)) {
                _ = try KeySchedule.sealWrite(pairs, conversation: Fixture.group, epoch: BLAKE2b.digest256([1]), key: EpochKey(), author: alice.id)
            }
        }
    }

    @Test("ciphertexts come in size buckets only")
    func buckets() throws {
        #expect(KeySchedule.bucket(for: 0) == 256)
        #expect(KeySchedule.bucket(for: 255) == 256)
        #expect(KeySchedule.bucket(for: 256) == 1024)
        #expect(KeySchedule.bucket(for: 5000) == 16384)
        #expect(KeySchedule.bucket(for: 262_143) == 262_144)
        #expect(KeySchedule.bucket(for: 262_144) == 327_680)
        var sizes = Set<Int>()
        let key = EpochKey()
        for length in [1, 10, 100, 200, 230, 300, 900, 1000, 3000] {
            let path = try Path("/conversations/\(Fixture.group)/messages/m")
            let text = String(repeating: "x", count: length)
            let body = try KeySchedule.sealWrite([WritePair(path: path, value: .object(["senderId": "s", "text": .string(text)]))],
                                                 conversation: Fixture.group, epoch: BLAKE2b.digest256([1]), key: key, author: alice.id)
            sizes.insert(body.ciphertext.count - XChaChaPoly.nonceByteCount - XChaChaPoly.tagByteCount)
            #expect(try KeySchedule.openWrite(body, key: key, author: alice.id).count == 1)
        }
        #expect(sizes == [256, 1024, 4096])
    }

    @Test("the epoch key opens for the members' devices only, and the meta with it")
    func keyRecord() throws {
        let (record, key) = try Fixture.keyRecord(alice, epoch: 1, members: [alice, bob], clock: 100 << 16)
        guard case let .groupKey(body) = try Record.decode(record.encoded).body else { Issue.record("not a key record"); return }
        #expect(KeySchedule.openKey(body, with: bob.device)?.copyBytes() == key.copyBytes())
        #expect(KeySchedule.openKey(body, with: alice.device)?.copyBytes() == key.copyBytes())
        #expect(KeySchedule.openKey(body, with: carol.device) == nil)
        let meta = try KeySchedule.openMeta(body, key: key, author: alice.id)
        #expect(meta.title == "Team" && Set(meta.members) == [alice.id, bob.id])
        #expect(throws: PrivateError.undecryptable) { try KeySchedule.openMeta(body, key: key, author: bob.id) }
    }

    @Test("records of kinds 5, 6 and 7 round-trip and refuse what breaks their grammar")
    func recordGrammar() throws {
        let (keyRecord, key) = try Fixture.keyRecord(alice, epoch: 1, members: [alice, bob], clock: 1 << 16)
        let message = try Fixture.message(bob, "hi", epoch: keyRecord, key: key, clock: 2 << 16)
        let leave = try Fixture.leave(bob, clock: 3 << 16)
        for record in [keyRecord, message, leave] { #expect(try Record.decode(record.encoded) == record) }
        #expect(keyRecord.kind.rawValue == 5 && message.kind.rawValue == 6 && leave.kind.rawValue == 7)
        // A bad conversation id, an epoch 0, no sealed keys, a short box.
        let bad: [RecordBody] = [
            .leave(LeaveBody(conversation: "general")),
            .sealedWrite(SealedWriteBody(conversation: "g_short", epoch: keyRecord.id, ciphertext: [UInt8](repeating: 0, count: 64))),
            .sealedWrite(SealedWriteBody(conversation: Fixture.group, epoch: keyRecord.id, ciphertext: [1, 2, 3])),
            .groupKey(GroupKeyBody(conversation: Fixture.group, epoch: 0, salt: Fixture.salt, boxes: [[UInt8](repeating: 1, count: 80)], meta: [UInt8](repeating: 0, count: 64))),
            .groupKey(GroupKeyBody(conversation: Fixture.group, epoch: 1, salt: Fixture.salt, boxes: [], meta: [UInt8](repeating: 0, count: 64))),
            .groupKey(GroupKeyBody(conversation: Fixture.group, epoch: 1, salt: Fixture.salt, boxes: [[1, 2]], meta: [UInt8](repeating: 0, count: 64))),
            .groupKey(GroupKeyBody(conversation: Fixture.group, epoch: 1, salt: [1], boxes: [[UInt8](repeating: 1, count: 80)], meta: [UInt8](repeating: 0, count: 64))),
        ]
        for body in bad {
            #expect(throws: RecordError.self) { _ = try Record.make(body: body, clock: 1, signer: alice.key) }
        }
    }
}

extension Array where Element == UInt8 {
    func windowsContain(_ needle: [UInt8]) -> Bool {
        guard needle.count <= count else { return false }
        return (0...(count - needle.count)).contains { Array(self[$0..<($0 + needle.count)]) == needle }
    }
}
