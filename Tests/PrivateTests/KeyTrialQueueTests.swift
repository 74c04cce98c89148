import Crypto
import Private
import Testing
import Wire

/// The budgets and turns of key record trials (Protocol.md §9, "box trials of key records"), at
/// the limit and just past it.
@Suite("Key record trial queue")
struct KeyTrialQueueTests {
    let mallory = PrivateKey(), alice = PrivateKey()
    let full = PrivateLimits.maxBoxes

    /// Records given by `next` at `now` until it gives none.
    func drain(_ queue: inout KeyTrialQueue, at now: UInt64) -> [(seq: Int64, author: PublicKey)] {
        var taken = [(seq: Int64, author: PublicKey)]()
        while let next = queue.next(nowMillis: now) { taken.append(next) }
        return taken
    }

    @Test("an author's budget: 2,000 boxes at once, 2,000 more each second; one box more waits")
    func authorBudget() {
        var queue = KeyTrialQueue(nowMillis: 0)
        for seq in 0..<10 { queue.enqueue(seq: Int64(seq), author: mallory.publicKey, boxes: full) }
        #expect(drain(&queue, at: 0).map(\.seq) == [0, 1], "the burst: two full records")
        #expect(queue.delay(nowMillis: 0) == 500, "the next full record in half a second")
        #expect(drain(&queue, at: 499).isEmpty, "one millisecond short of a record's budget")
        #expect(drain(&queue, at: 500).map(\.seq) == [2])
        #expect(drain(&queue, at: 1_500).map(\.seq) == [3, 4])
        // Waiting longer than the burst does not bank more than the burst.
        #expect(drain(&queue, at: 60_000).map(\.seq) == [5, 6])
        #expect(queue.count == 3)
        // A record of 1 box over what is left waits too.
        var small = KeyTrialQueue(nowMillis: 0)
        small.enqueue(seq: 0, author: alice.publicKey, boxes: 1_000)
        small.enqueue(seq: 1, author: alice.publicKey, boxes: 999)
        small.enqueue(seq: 2, author: alice.publicKey, boxes: 2)
        #expect(drain(&small, at: 0).map(\.seq) == [0, 1])
        #expect(drain(&small, at: 0).isEmpty)
        #expect(drain(&small, at: 1).map(\.seq) == [2], "two boxes a millisecond")
    }

    @Test("the node's budget: 8,000 boxes a second whatever the number of authors")
    func nodeBudget() {
        var queue = KeyTrialQueue(nowMillis: 0)
        let authors = (0..<20).map { _ in PrivateKey().publicKey }
        var seq: Int64 = 0
        for author in authors {
            for _ in 0..<50 {
                queue.enqueue(seq: seq, author: author, boxes: full)
                seq += 1
            }
        }
        var tried = drain(&queue, at: 0).count
        #expect(tried == 8, "8,000 boxes at once, of eight authors")
        for second in 1...5 {
            let now = UInt64(second) * 1_000
            let taken = drain(&queue, at: now).count
            #expect(taken == 8, "second \(second)")
            tried += taken
        }
        #expect(tried == 48)
        #expect(queue.count == 1_000 - 48, "the rest waits, none dropped")
    }

    @Test("authors take turns: one author's flood waits behind its budget, never ahead of another's record; each author's records keep their order")
    func turns() {
        var queue = KeyTrialQueue(nowMillis: 0)
        for seq in 0..<1_000 { queue.enqueue(seq: Int64(seq), author: mallory.publicKey, boxes: full) }
        _ = drain(&queue, at: 0)
        // Alice's record comes after the flood and is tried at once.
        queue.enqueue(seq: 5_000, author: alice.publicKey, boxes: 3)
        #expect(drain(&queue, at: 0).map(\.seq) == [5_000])
        // With both waiting and budget for both, they alternate.
        var both = KeyTrialQueue(nowMillis: 0)
        for seq in 0..<4 {
            both.enqueue(seq: Int64(seq), author: mallory.publicKey, boxes: 10)
            both.enqueue(seq: Int64(100 + seq), author: alice.publicKey, boxes: 10)
        }
        #expect(drain(&both, at: 0).map(\.seq) == [0, 100, 1, 101, 2, 102, 3, 103])
        // Never dropped: the flood is given in its order, two records a second.
        var seqs = [Int64]()
        var now: UInt64 = 0
        while queue.count > 0 {
            now += 1_000
            seqs += drain(&queue, at: now).map(\.seq)
        }
        #expect(seqs == Array(2..<1_000).map(Int64.init))
        #expect(now == 499_000)
    }

    @Test("a record queued twice waits once; sizes outside 1 ... 1,000 boxes are charged within it")
    func bounds() {
        var queue = KeyTrialQueue(nowMillis: 0)
        queue.enqueue(seq: 7, author: alice.publicKey, boxes: 0)
        queue.enqueue(seq: 7, author: alice.publicKey, boxes: 0)
        #expect(queue.count == 1)
        queue.enqueue(seq: 8, author: alice.publicKey, boxes: 50_000)
        #expect(drain(&queue, at: 0).map(\.seq) == [7, 8])
        #expect(queue.delay(nowMillis: 0) == nil)
        queue.enqueue(seq: 9, author: alice.publicKey, boxes: 1)
        queue.removeAll()
        #expect(queue.count == 0 && queue.next(nowMillis: 10_000) == nil)
    }
}
