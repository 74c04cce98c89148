import Crypto
import Private
import Testing
import TestSupport
import Tree
import Wire

@Suite("Private: membership as a function of the records")
struct MembershipTests {
    let alice = Fixture.alice, bob = Fixture.bob, carol = Fixture.carol, dave = Fixture.dave

    func ms(_ t: UInt64) -> UInt64 { t << 16 }

    /// Epoch 1 {alice, bob, carol}; bob writes; epoch 2 removes bob; bob writes again (in epoch
    /// 1, the only key he holds); carol writes in epoch 2.
    func removal() throws -> (records: [Record], e1: Record, e2: Record, bobBefore: Record, bobAfter: Record, carolAfter: Record) {
        let (e1, k1) = try Fixture.keyRecord(alice, epoch: 1, members: [alice, bob, carol], clock: ms(100))
        let bobBefore = try Fixture.message(bob, "before", epoch: e1, key: k1, clock: ms(110))
        let (e2, k2) = try Fixture.keyRecord(alice, epoch: 2, members: [alice, carol], clock: ms(200))
        let bobAfter = try Fixture.message(bob, "after", epoch: e1, key: k1, clock: ms(210))
        let carolAfter = try Fixture.message(carol, "new", epoch: e2, key: k2, clock: ms(220))
        return ([e1, bobBefore, e2, bobAfter, carolAfter], e1, e2, bobBefore, bobAfter, carolAfter)
    }

    @Test("the creator removes a member: the member's later writes have no effect and the new epoch stays closed to them")
    func creatorRemoves() throws {
        let s = try removal()
        let carolView = Membership(conversation: Fixture.group, records: s.records, device: carol.device)
        #expect(carolView.currentMembers == [alice.id, carol.id])
        #expect(carolView.admits(author: bob.id, order: s.bobBefore.order, epoch: s.e1.id))
        #expect(!carolView.admits(author: bob.id, order: s.bobAfter.order, epoch: s.e1.id))
        #expect(carolView.admits(author: carol.id, order: s.carolAfter.order, epoch: s.e2.id))
        let bobView = Membership(conversation: Fixture.group, records: s.records, device: bob.device)
        #expect(bobView.key(of: s.e2.id) == nil, "a removed member holds no key of the new epoch")
        #expect(bobView.writableEpoch(for: bob.id) == nil)
        #expect(!bobView.admits(author: carol.id, order: s.carolAfter.order, epoch: s.e2.id))
        #expect(bobView.admits(author: bob.id, order: s.bobBefore.order, epoch: s.e1.id))
        let daveView = Membership(conversation: Fixture.group, records: s.records, device: dave.device)
        #expect(daveView.opened.isEmpty && daveView.currentMembers == nil)
    }

    @Test("only the creator's key records count; a member cannot add members")
    func forgedKeyRecords() throws {
        let (e1, k1) = try Fixture.keyRecord(alice, epoch: 1, members: [alice, bob], clock: ms(100))
        // Bob makes an epoch 2 with dave in it, reusing alice's salt: not alice, so it does not count.
        let (forged, fk) = try Fixture.keyRecord(bob, epoch: 2, members: [alice, bob, dave], clock: ms(150))
        let daveWrites = try Fixture.message(dave, "let me in", epoch: forged, key: fk, clock: ms(160))
        let records = [e1, forged, daveWrites]
        for person in [alice, bob, dave] {
            let view = Membership(conversation: Fixture.group, records: records, device: person.device)
            #expect(view.epochs.map(\.id) == [e1.id])
            #expect(!view.admits(author: dave.id, order: daveWrites.order, epoch: forged.id))
        }
        // Dave writing in epoch 1 (somehow holding its key) is no member either.
        let sneaky = try Fixture.message(dave, "hi", epoch: e1, key: k1, clock: ms(170))
        #expect(!Membership(conversation: Fixture.group, records: records + [sneaky], device: alice.device)
            .admits(author: dave.id, order: sneaky.order, epoch: e1.id))
    }

    @Test("a member who leaves stops counting from the leave on; the creator cannot leave")
    func leaving() throws {
        let (e1, k1) = try Fixture.keyRecord(alice, epoch: 1, members: [alice, bob, carol], clock: ms(100))
        let before = try Fixture.message(carol, "bye soon", epoch: e1, key: k1, clock: ms(110))
        let leave = try Fixture.leave(carol, clock: ms(120))
        let after = try Fixture.message(carol, "still here?", epoch: e1, key: k1, clock: ms(130))
        let creatorLeaves = try Fixture.leave(alice, clock: ms(125))
        let view = Membership(conversation: Fixture.group, records: [e1, before, leave, after, creatorLeaves], device: bob.device)
        #expect(view.currentMembers == [alice.id, bob.id])
        #expect(view.admits(author: carol.id, order: before.order, epoch: e1.id))
        #expect(!view.admits(author: carol.id, order: after.order, epoch: e1.id))
        #expect(Membership(conversation: Fixture.group, records: [e1, leave], device: carol.device).writableEpoch(for: carol.id) == nil)
    }

    @Test("a new member reads from when they joined, or all history when the group hands it on")
    func joining() throws {
        let (e1, k1) = try Fixture.keyRecord(alice, epoch: 1, members: [alice, bob], clock: ms(100))
        let old = try Fixture.message(bob, "old", epoch: e1, key: k1, clock: ms(110))
        let (closed, _) = try Fixture.keyRecord(alice, epoch: 2, members: [alice, bob, dave], clock: ms(200))
        let closedView = Membership(conversation: Fixture.group, records: [e1, old, closed], device: dave.device)
        #expect(closedView.key(of: e1.id) == nil && closedView.key(of: closed.id) != nil)
        #expect(!closedView.admits(author: bob.id, order: old.order, epoch: e1.id))
        let (shared, _) = try Fixture.keyRecord(alice, epoch: 2, members: [alice, bob, dave], previous: (e1.id, k1), clock: ms(200))
        let sharedView = Membership(conversation: Fixture.group, records: [e1, old, shared], device: dave.device)
        #expect(sharedView.key(of: e1.id)?.copyBytes() == k1.copyBytes())
        #expect(sharedView.admits(author: bob.id, order: old.order, epoch: e1.id))
        // A write backdated to before the writer joined is not history: it has no effect.
        let (e3, k3) = try Fixture.keyRecord(alice, epoch: 3, members: [alice, bob, dave], previous: (shared.id, EpochKey()), clock: ms(300))
        let backdated = try Fixture.message(dave, "I was always here", epoch: e3, key: k3, clock: ms(105))
        #expect(!Membership(conversation: Fixture.group, records: [e1, old, shared, e3, backdated], device: alice.device)
            .admits(author: dave.id, order: backdated.order, epoch: e3.id))
    }

    @Test("a direct conversation: either member keys it, no one else, and its members are exactly the two")
    func direct() throws {
        let dm = ConversationID.direct(alice.id, bob.id)
        let (e1, k1) = try Fixture.keyRecord(bob, dm, epoch: 1, members: [alice, bob], title: "", salt: alice.id.bytes, clock: ms(100))
        let hello = try Fixture.message(alice, "hello", conversation: dm, epoch: e1, key: k1, clock: ms(110))
        let view = Membership(conversation: dm, records: [e1, hello], device: alice.device)
        #expect(view.currentMembers == [alice.id, bob.id])
        #expect(view.admits(author: alice.id, order: hello.order, epoch: e1.id))
        // Bob sealing a "direct" epoch that also lets carol in breaks the rule: not opened.
        let (wide, _) = try Fixture.keyRecord(bob, dm, epoch: 2, members: [alice, bob, carol], title: "", salt: alice.id.bytes, clock: ms(200))
        let wideView = Membership(conversation: dm, records: [e1, hello, wide], device: carol.device)
        #expect(wideView.opened.isEmpty)
        // Carol cannot make a key record for it at all.
        let (carols, _) = try Fixture.keyRecord(carol, dm, epoch: 3, members: [alice, bob, carol], title: "", salt: alice.id.bytes, clock: ms(300))
        #expect(!Membership(conversation: dm, records: [e1, carols], device: alice.device).epochs.contains { $0.id == carols.id })
    }

    @Test("any order of the same records gives the same membership and the same verdicts", arguments: 0..<8)
    func orderIndependence(seed: UInt64) throws {
        var rng = SplitMix64(seed: seed)
        let s = try removal()
        let leave = try Fixture.leave(carol, clock: ms(230))
        let (e3, k3) = try Fixture.keyRecord(alice, epoch: 3, members: [alice, carol, dave], previous: (s.e2.id, EpochKey()), clock: ms(300))
        let (concurrent, _) = try Fixture.keyRecord(alice, epoch: 3, members: [alice, bob], clock: ms(300))
        let daveWrites = try Fixture.message(dave, "joined", epoch: e3, key: k3, clock: ms(310))
        let records = s.records + [leave, e3, concurrent, daveWrites]
        let writes = records.filter { $0.kind == .sealedWrite }
        func verdicts(_ view: Membership) -> [Bool] {
            writes.map { w in
                guard case let .sealedWrite(b) = w.body else { return false }
                return view.admits(author: w.author, order: w.order, epoch: b.epoch)
            }
        }
        for person in [alice, bob, carol, dave] {
            let reference = Membership(conversation: Fixture.group, records: records, device: person.device)
            for _ in 0..<5 {
                var shuffled = records
                shuffled.shuffle(using: &rng)
                shuffled += shuffled.prefix(2)  // duplicates change nothing
                let view = Membership(conversation: Fixture.group, records: shuffled, device: person.device)
                #expect(view.epochs.map(\.id) == reference.epochs.map(\.id))
                #expect(view.currentMembers == reference.currentMembers)
                #expect(verdicts(view) == verdicts(reference))
                #expect(view.current?.id == reference.current?.id)
            }
        }
    }
}
