import Crypto
import Wire

/// What a node does with sealed live values it cannot open (Protocol.md §11.8): it is not a
/// member of their conversation, or not yet (the key record has not reached it). It relays
/// each once, so members reachable only through it still see typing and receipts, and keeps
/// nothing readable: only the (author, version) pairs it relayed lately, to relay each once,
/// and a rate per author. Pure: values and the time in, whether to relay out.
///
/// Bounded like `LiveTable`: the pairs remembered, the authors with a bucket, and each
/// author's rate, so a member signing sealed values of any conversation at any rate, with any
/// number of identities, costs bounded memory and bounded relaying.
public struct SealedLiveRelay: Sendable {
    public struct Limits: Sendable {
        /// (author, version) pairs remembered; an older replay is relayed once more, and members
        /// drop it by its version.
        public var remembered = 4_096
        /// Authors with a rate bucket at once.
        public var authors = 256
        /// Sealed values relayed per author and second on average, and at once.
        public var ratePerSecond = 20.0
        public var burst = 40.0

        public init() {}
    }

    struct Seen: Hashable, Sendable {
        let author: PublicKey
        let version: UInt64
    }

    public let limits: Limits
    private var seen = Set<Seen>()
    private var order = [Seen]()
    private var oldest = 0
    private var buckets: [PublicKey: TokenBucket] = [:]

    public init(limits: Limits = Limits()) { self.limits = limits }

    /// Whether to relay `value`: not relayed lately, and its author within its rate.
    public mutating func admit(_ value: SealedLive, now: Double) -> Bool {
        let key = Seen(author: value.author, version: value.version)
        guard !seen.contains(key) else { return false }
        if buckets[value.author] == nil, buckets.count >= limits.authors {
            // Full: buckets that have refilled say nothing a fresh one would not, so they go.
            buckets = buckets.filter { _, bucket in !bucket.wouldBeFull(now: now, rate: limits.ratePerSecond, burst: limits.burst) }
            guard buckets.count < limits.authors else { return false }
        }
        var bucket = buckets[value.author] ?? TokenBucket(full: limits.burst, at: now)
        bucket.refill(now: now, rate: limits.ratePerSecond, burst: limits.burst)
        guard bucket.hasToken else { return false }
        bucket.take()
        buckets[value.author] = bucket
        remember(key)
        return true
    }

    /// Marks `value` as relayed (one this node opened and relayed as a member does).
    public mutating func note(_ value: SealedLive) {
        let key = Seen(author: value.author, version: value.version)
        if !seen.contains(key) { remember(key) }
    }

    private mutating func remember(_ key: Seen) {
        seen.insert(key)
        order.append(key)
        if order.count - oldest > limits.remembered {
            seen.remove(order[oldest])
            oldest += 1
            if oldest > limits.remembered { order.removeFirst(oldest); oldest = 0 }
        }
    }

    /// How many pairs are remembered (for tests).
    public var rememberedCount: Int { seen.count }
}
