import Crypto
import Wire

/// When the boxes of each key record are tried (Protocol.md §9, §11.5): a fair queue of the key
/// records waiting for a trial, with a budget of box trials per second for each author and for
/// the node as a whole. Pure: times are given in milliseconds of a monotonic clock.
///
/// Why: a key record holds up to `PrivateLimits.maxBoxes` sealed boxes, and a node learns
/// whether one is for it only by trying them, one X25519 each (about 60 µs: 60 ms a record).
/// Anyone who may key a conversation (any creator of a group, so anyone) can send records of
/// 1,000 boxes of random bytes for free, and every node would try them all. Trials are charged
/// to the record's author instead: each author has `perAuthorBurst` box trials at once and
/// `perAuthorPerSecond` more each second, the node `totalBurst` and `totalPerSecond`. Authors
/// with records waiting take turns (round robin, one record a turn), so one author's flood
/// waits behind its own budget and never ahead of another author's records. A record beyond
/// the budget waits, in arrival order among its author's records, and is never dropped: it may
/// be the one that adds this node to a group.
public struct KeyTrialQueue: Sendable {
    public struct Limits: Sendable, Equatable {
        public var perAuthorPerSecond: Int
        public var perAuthorBurst: Int
        public var totalPerSecond: Int
        public var totalBurst: Int

        /// An author's budget: 2,000 boxes a second (about 0.12 s of one core), two full key
        /// records at once. The node's: 8,000 boxes a second (about half a core), so four
        /// authors flooding at their budget still leave room for a fifth.
        public static let standard = Limits(perAuthorPerSecond: 2_000, perAuthorBurst: 2 * PrivateLimits.maxBoxes,
                                            totalPerSecond: 8_000, totalBurst: 8_000)

        public init(perAuthorPerSecond: Int, perAuthorBurst: Int, totalPerSecond: Int, totalBurst: Int) {
            precondition(perAuthorBurst >= PrivateLimits.maxBoxes && totalBurst >= PrivateLimits.maxBoxes,
                         "a budget must hold one full key record")
            self.perAuthorPerSecond = perAuthorPerSecond
            self.perAuthorBurst = perAuthorBurst
            self.totalPerSecond = totalPerSecond
            self.totalBurst = totalBurst
        }
    }

    /// A key record waiting: its arrival number and how many boxes a trial costs (at least 1).
    public struct Waiting: Sendable, Equatable {
        public let seq: Int64
        public let boxes: Int
    }

    /// Box trials available, refilled continuously up to a burst.
    struct Bucket: Sendable {
        var tokens: Double
        var atMillis: UInt64

        mutating func refill(now: UInt64, perSecond: Int, burst: Int) {
            if now > atMillis { tokens = min(Double(burst), tokens + Double(now - atMillis) * Double(perSecond) / 1_000) }
            atMillis = max(atMillis, now)
        }

        /// Milliseconds until `cost` is available.
        func wait(for cost: Int, perSecond: Int) -> UInt64 {
            tokens >= Double(cost) ? 0 : UInt64(((Double(cost) - tokens) * 1_000 / Double(perSecond)).rounded(.up))
        }
    }

    public let limits: Limits
    private var waiting: [PublicKey: [Waiting]] = [:]
    /// Where each author's list is read from (lists are consumed from the front).
    private var heads: [PublicKey: Int] = [:]
    /// Authors with records waiting, in turn order; `turn` is the next to go.
    private var ring: [PublicKey] = []
    private var turn = 0
    private var queued = Set<Int64>()
    private var authors: [PublicKey: Bucket] = [:]
    private var total: Bucket

    public init(limits: Limits = .standard, nowMillis: UInt64) {
        self.limits = limits
        total = Bucket(tokens: Double(limits.totalBurst), atMillis: nowMillis)
    }

    /// Records waiting for a trial.
    public var count: Int { queued.count }

    public func contains(_ seq: Int64) -> Bool { queued.contains(seq) }

    /// Adds a key record by `author` of `boxes` boxes (charged as at least 1), unless waiting already.
    public mutating func enqueue(seq: Int64, author: PublicKey, boxes: Int) {
        guard queued.insert(seq).inserted else { return }
        if waiting[author] == nil {
            waiting[author] = []
            heads[author] = 0
            ring.append(author)
        }
        waiting[author]!.append(Waiting(seq: seq, boxes: max(1, min(boxes, PrivateLimits.maxBoxes))))
    }

    /// The next record whose trial the budgets allow now, charged to them; nil when none may
    /// be tried yet. Authors take turns; an author out of budget is passed over, not waited for.
    public mutating func next(nowMillis now: UInt64) -> (seq: Int64, author: PublicKey)? {
        total.refill(now: now, perSecond: limits.totalPerSecond, burst: limits.totalBurst)
        guard !ring.isEmpty else { return nil }
        for step in 0..<ring.count {
            let index = (turn + step) % ring.count
            let author = ring[index]
            let head = waiting[author]![heads[author]!]
            var bucket = authors[author] ?? Bucket(tokens: Double(limits.perAuthorBurst), atMillis: now)
            bucket.refill(now: now, perSecond: limits.perAuthorPerSecond, burst: limits.perAuthorBurst)
            authors[author] = bucket
            guard bucket.tokens >= Double(head.boxes) else { continue }
            guard total.tokens >= Double(head.boxes) else { return nil }  // no one may go: the node's budget is spent
            authors[author]!.tokens -= Double(head.boxes)
            total.tokens -= Double(head.boxes)
            queued.remove(head.seq)
            heads[author]! += 1
            if heads[author]! == waiting[author]!.count {
                waiting[author] = nil
                heads[author] = nil
                ring.remove(at: index)
                turn = ring.isEmpty ? 0 : index % ring.count
            } else {
                if heads[author]! >= 1_024 {  // drop what was read, now and then
                    waiting[author]!.removeFirst(heads[author]!)
                    heads[author] = 0
                }
                turn = (index + 1) % ring.count
            }
            forgetFullBuckets(now: now)
            return (head.seq, author)
        }
        return nil
    }

    /// Milliseconds until `next` may give a record (0: now); nil when none is waiting.
    public func delay(nowMillis now: UInt64) -> UInt64? {
        guard !ring.isEmpty else { return nil }
        var totalNow = total
        totalNow.refill(now: now, perSecond: limits.totalPerSecond, burst: limits.totalBurst)
        var soonest = UInt64.max
        for author in ring {
            let head = waiting[author]![heads[author]!]
            var bucket = authors[author] ?? Bucket(tokens: Double(limits.perAuthorBurst), atMillis: now)
            bucket.refill(now: now, perSecond: limits.perAuthorPerSecond, burst: limits.perAuthorBurst)
            let wait = max(bucket.wait(for: head.boxes, perSecond: limits.perAuthorPerSecond),
                           totalNow.wait(for: head.boxes, perSecond: limits.totalPerSecond))
            soonest = min(soonest, wait)
        }
        return soonest
    }

    /// Empties the queue (a new device key: every record is tried again); budgets are kept.
    public mutating func removeAll() {
        waiting = [:]
        heads = [:]
        ring = []
        turn = 0
        queued = []
    }

    /// The buckets of authors with nothing waiting are dropped once full (they would refill to
    /// full anyway), so memory follows the authors waiting, not every author ever seen.
    private mutating func forgetFullBuckets(now: UInt64) {
        guard authors.count > 2 * ring.count + 64 else { return }
        let limits = limits
        authors = authors.filter { author, bucket in
            var refilled = bucket
            refilled.refill(now: now, perSecond: limits.perAuthorPerSecond, burst: limits.perAuthorBurst)
            return waiting[author] != nil || refilled.tokens < Double(limits.perAuthorBurst)
        }
    }
}
