import Crypto
import Tree
import Wire

/// The live values a node holds (Protocol.md §7, §9): typing flags and statuses by author, as
/// long as the author's node is heard, and read receipts, one per (conversation, user), kept.
/// Pure: values, the time and who is live come in; what changed comes out. The node owns one
/// and feeds it from datagrams, sessions and its own API.
///
/// Every bound is per author or in total, so a hostile member who signs values at any path, of
/// any size, at any rate, with any number of identities, costs a bounded amount of memory.
public struct LiveTable: Sendable {
    public struct Limits: Sendable {
        /// Typing flags and status values one author may hold at once.
        public var valuesPerAuthor = 32
        /// Authors with typing or status values at once.
        public var authors = 256
        /// Values taken from one author per second, on average (a token bucket)...
        public var ratePerSecond = 20.0
        /// ...and at once, after a quiet moment.
        public var burst = 40.0
        /// Read receipts of one author (conversations it has read).
        public var receiptsPerAuthor = 2_000
        /// Read receipts in all.
        public var receipts = 65_536
        /// New receipts taken from one author per second, on average (a token bucket whose burst
        /// is `receiptsPerAuthor`, so a new session's bulk of them passes whole).
        public var receiptRatePerSecond = 20.0

        public init() {}
    }

    /// What an offered value did.
    public enum Outcome: Equatable, Sendable {
        /// Taken: the tree changed at this path (a value set, replaced or cleared).
        case changed(Path)
        /// Taken, and the tree shows the same (a newer receipt of the same message, a clear of nothing).
        case unchanged
        /// Dropped, with the reason (nothing changed).
        case refused(String)
    }

    struct Author: Sendable {
        var instance: [UInt8]
        var version: UInt64 = 0
        var values: [Path: LiveValue] = [:]
        var bucket: TokenBucket
        /// For an author whose node is not live here, whose values came relayed by a peer: when
        /// they go unless a newer value renews them (Protocol.md §5.7). Nil while its node is live here.
        var relayedUntil: Double?
    }

    public let limits: Limits
    private var authors: [PublicKey: Author] = [:]
    /// Read receipts by their path (`/conversations/$cid/readReceipts/$uid`).
    public private(set) var receipts: [Path: LiveValue] = [:]
    private var receiptsByAuthor: [PublicKey: Int] = [:]
    /// Token buckets of the authors holding receipts.
    private var receiptBuckets: [PublicKey: TokenBucket] = [:]

    public init(limits: Limits = Limits()) { self.limits = limits }

    /// Takes `value` if its author may write its path and it is newer than what is held.
    /// `instanceLive` says whether the value's instance is the author's node as heard now (a
    /// beacon or session of that instance): typing and status values of any other are refused.
    /// `relayedFor`, for a value a peer relayed whose author's node is not live here, is how long
    /// it is held: until then, or until a newer value of the author renews it.
    public mutating func offer(_ value: LiveValue, instanceLive: Bool, relayedFor: Double? = nil, now: Double) -> Outcome {
        guard let (kind, owner) = LivePaths.classify(value.path) else { return .refused("\(value.path) is not a live path") }
        guard owner == value.author.userID else { return .refused("\(value.author.userID) may not write \(value.path)") }
        // A private conversation's live values are for its members only: sealed (§11.8), never plain.
        guard value.sealed != nil || value.privateConversation == nil else { return .refused("plain live value in a private conversation") }
        switch kind {
        case .receipt:
            return offerReceipt(value, now: now)
        case .typing, .status:
            guard instanceLive || relayedFor != nil else { return .refused("its node is not live") }
            return offerEphemeral(value, relayedUntil: instanceLive ? nil : relayedFor.map { now + $0 }, now: now)
        }
    }

    private mutating func offerReceipt(_ value: LiveValue, now: Double) -> Outcome {
        let burst = Double(limits.receiptsPerAuthor)
        var bucket = receiptBuckets[value.author] ?? TokenBucket(full: burst, at: now)
        bucket.refill(now: now, rate: limits.receiptRatePerSecond, burst: burst)
        if let held = receipts[value.path] {
            guard value.version > held.version else { return .refused("not newer than the receipt held") }
            guard bucket.hasToken else { return .refused("more than \(Int(limits.receiptRatePerSecond)) receipts a second") }
            bucket.take()
            receiptBuckets[value.author] = bucket
            receipts[value.path] = value
            if value.value == .null { drop(receiptAt: value.path) }
            return held.value == value.value ? .unchanged : .changed(value.path)
        }
        guard value.value != .null else { return .unchanged }
        guard receipts.count < limits.receipts else { return .refused("\(limits.receipts) receipts held") }
        guard receiptsByAuthor[value.author, default: 0] < limits.receiptsPerAuthor else {
            return .refused("\(limits.receiptsPerAuthor) receipts held of this author")
        }
        guard bucket.hasToken else { return .refused("more than \(Int(limits.receiptRatePerSecond)) receipts a second") }
        bucket.take()
        receiptBuckets[value.author] = bucket
        receipts[value.path] = value
        receiptsByAuthor[value.author, default: 0] += 1
        return .changed(value.path)
    }

    private mutating func drop(receiptAt path: Path) {
        guard let held = receipts.removeValue(forKey: path) else { return }
        receiptsByAuthor[held.author, default: 1] -= 1
        if receiptsByAuthor[held.author] == 0 {
            receiptsByAuthor.removeValue(forKey: held.author)
            receiptBuckets.removeValue(forKey: held.author)
        }
    }

    private mutating func offerEphemeral(_ value: LiveValue, relayedUntil: Double?, now: Double) -> Outcome {
        var author: Author
        if let held = authors[value.author], held.instance == value.instance {
            author = held
        } else {
            guard authors[value.author] != nil || authors.count < limits.authors else { return .refused("\(limits.authors) authors held") }
            author = Author(instance: value.instance, bucket: TokenBucket(full: limits.burst, at: now))
        }
        guard value.version > author.version else { return .refused("not newer than the last value of its author") }
        author.bucket.refill(now: now, rate: limits.ratePerSecond, burst: limits.burst)
        guard author.bucket.hasToken else { return .refused("more than \(Int(limits.ratePerSecond)) values a second") }
        let held = author.values[value.path]
        if value.value != .null, held == nil, author.values.count >= limits.valuesPerAuthor {
            return .refused("\(limits.valuesPerAuthor) values held of this author")
        }
        author.bucket.take()
        author.version = value.version
        author.relayedUntil = relayedUntil
        if value.value == .null { author.values.removeValue(forKey: value.path) } else { author.values[value.path] = value }
        authors[value.author] = author  // an earlier instance's values go (the node calls `keep` first, to show it)
        return held?.value == value.value || (held == nil && value.value == .null) ? .unchanged : .changed(value.path)
    }

    /// Forgets every typing and status value of `author` (its node was lost, stopped, or
    /// restarted as a new instance); returns the paths that changed.
    public mutating func forget(_ author: PublicKey) -> [Path] {
        guard let held = authors.removeValue(forKey: author) else { return [] }
        return held.values.keys.sorted()
    }

    /// Forgets `author`'s typing and status values unless they come from `instance`.
    public mutating func keep(_ author: PublicKey, instance: [UInt8]) -> [Path] {
        guard let held = authors[author], held.instance != instance else { return [] }
        return forget(author)
    }

    /// Whether `author`'s values came relayed and are still within their time (`offer`'s `relayedFor`).
    public func relayed(_ author: PublicKey, now: Double) -> Bool {
        guard let until = authors[author]?.relayedUntil else { return false }
        return until > now
    }

    /// Forgets every value, typing, status or receipt, that `matching` picks (a private
    /// conversation's values where this node's user is no longer a member); returns the paths.
    public mutating func forget(where matching: (LiveValue) -> Bool) -> [Path] {
        var changed = [Path]()
        for (key, author) in authors {
            let gone = author.values.filter { matching($0.value) }.keys
            guard !gone.isEmpty else { continue }
            for path in gone { authors[key]!.values.removeValue(forKey: path) }
            changed += gone
        }
        for (path, value) in receipts where matching(value) {
            drop(receiptAt: path)
            changed.append(path)
        }
        return changed.sorted()
    }

    /// Whether any value held is of a private conversation (they are checked against its membership).
    public var hasPrivateValues: Bool {
        authors.values.contains { $0.values.values.contains { $0.sealed != nil } } || receipts.values.contains { $0.sealed != nil }
    }

    /// The earliest moment after `now` a relayed author's values expire (`offer`'s `relayedFor`), if any.
    public func nextRelayedExpiry(after now: Double) -> Double? {
        authors.values.compactMap(\.relayedUntil).filter { $0 > now }.min()
    }

    /// Authors holding typing or status values.
    public var ephemeralAuthors: [PublicKey] { Array(authors.keys) }

    /// Every value to show: typing flags, statuses and receipts, by path.
    public var entries: [(Path, JSONValue)] {
        var out = [(Path, JSONValue)]()
        for author in authors.values { for (path, value) in author.values { out.append((path, value.value)) } }
        for (path, value) in receipts { out.append((path, value.value)) }
        return out
    }

    /// The typing and status values of one author, as signed (to send a newly met peer).
    public func values(of author: PublicKey) -> [LiveValue] {
        authors[author].map { Array($0.values.values) } ?? []
    }

    /// How many typing and status values are held in all.
    public var ephemeralCount: Int { authors.values.reduce(0) { $0 + $1.values.count } }

    /// The receipt held at `path`.
    public func receipt(at path: Path) -> LiveValue? { receipts[path] }
}
