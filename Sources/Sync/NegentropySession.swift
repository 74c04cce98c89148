/// One side of a Negentropy v1 reconciliation, as a sans-IO state machine.
///
/// The caller moves bytes; the session only turns a peer message into a reply. That keeps the
/// protocol testable without sockets and lets any transport carry it. The side that calls
/// `initiate()` is the initiator and learns the have/need ids; the other side answers with
/// `reconcile(_:)`. Each message is handled on its own against the immutable item set, so the
/// session keeps no per-round state that a peer could inflate.
public struct NegentropySession: Sendable {
    /// Which side of the exchange this session plays; fixed by the first call.
    public enum Role: Sendable, Equatable {
        /// Sent the first message; learns have/need ids and decides when to stop.
        case initiator
        /// Answers each message; learns nothing itself.
        case responder
    }

    /// Protocol version 1 as written in every message's first byte.
    public static let protocolVersion: UInt8 = 0x61
    /// What a responder sends on `.unsupportedVersion`: just its own version byte, so the peer
    /// can downgrade and retry (as the v1 specification asks).
    public static let unsupportedVersionReply: [UInt8] = [protocolVersion]
    /// The smallest non-zero frame size limit; below it a message might not make progress.
    public static let minimumFrameSizeLimit = 4096
    /// A range with a differing fingerprint is split into this many sub-ranges.
    static let bucketCount = 16
    /// Ranges holding fewer items than this are sent as an id list instead of being split.
    static let idListThreshold = 2 * bucketCount
    /// Bytes kept free for the closing "fingerprint of the rest" range: infinity bound (2),
    /// mode (1) and fingerprint (16).
    static let continuationBytes = 2 + 1 + NegentropyFingerprint.length
    /// Largest possible encoding of a bound: 10-byte timestamp varint, length byte, 32-byte prefix.
    static let maxBoundBytes = NegentropyVarint.maxLength + 1 + NegentropyItem.idLength

    /// Our items, sorted and deduplicated.
    public let items: NegentropySortedItems
    /// Upper bound on every message this session produces; 0 means unlimited.
    public let frameSizeLimit: Int
    /// Peer messages larger than this are rejected before decoding.
    public let maxMessageBytes: Int
    /// Peer messages with more ranges than this are rejected, capping per-message work.
    public let maxRanges: Int
    /// Nil until `initiate()` or the first `reconcile(_:)` decides it.
    public private(set) var role: Role?

    /// Creates a session over `items`.
    ///
    /// - Parameters:
    ///   - frameSizeLimit: 0 for unlimited, otherwise at least 4096 bytes. Long exchanges then
    ///     take more round trips but each message fits the transport's frame.
    ///   - maxMessageBytes: largest peer message accepted. The default (16 MiB) covers a reply
    ///     listing about half a million ids; raise it for unlimited frames over larger sets.
    ///   - maxRanges: most ranges accepted in one peer message (default 2^20).
    public init(
        items: NegentropySortedItems,
        frameSizeLimit: Int = 60_000,
        maxMessageBytes: Int = 1 << 24,
        maxRanges: Int = 1 << 20
    ) throws(NegentropyError) {
        guard frameSizeLimit == 0 || frameSizeLimit >= Self.minimumFrameSizeLimit else {
            throw .frameSizeLimitTooSmall(frameSizeLimit)
        }
        self.items = items
        self.frameSizeLimit = frameSizeLimit
        self.maxMessageBytes = maxMessageBytes
        self.maxRanges = maxRanges
    }

    /// Convenience: sorts and deduplicates `items` first.
    public init(
        items: [NegentropyItem],
        frameSizeLimit: Int = 60_000,
        maxMessageBytes: Int = 1 << 24,
        maxRanges: Int = 1 << 20
    ) throws(NegentropyError) {
        try self.init(items: NegentropySortedItems(items), frameSizeLimit: frameSizeLimit,
                      maxMessageBytes: maxMessageBytes, maxRanges: maxRanges)
    }

    /// Makes this session the initiator and returns the first message: the whole keyspace as
    /// 16 fingerprinted buckets, or as an id list when we hold fewer than 32 items.
    public mutating func initiate() throws(NegentropyError) -> [UInt8] {
        guard role == nil else { throw .wrongRole }
        role = .initiator
        var out = NegentropyMessageWriter()
        appendSplit(0..<items.count, upperBound: .infinity, to: &out)
        return out.bytes
    }

    /// Handles one peer message. A session that has not initiated becomes the responder.
    ///
    /// Throws without changing the session if the message is malformed; a responder receiving
    /// `.unsupportedVersion` should send `unsupportedVersionReply`.
    public mutating func reconcile(_ message: [UInt8]) throws(NegentropyError) -> NegentropyStep {
        let ranges = try NegentropyMessageReader.decode(message, maxMessageBytes: maxMessageBytes, maxRanges: maxRanges)
        let isInitiator = role == .initiator
        if role == nil { role = .responder }

        var out = NegentropyMessageWriter()
        var have: [[UInt8]] = []
        var need: [[UInt8]] = []
        let itemCount = items.count
        var lower = 0
        // Ranges we are done with are not written until something follows them (trailing skips
        // are implicit).
        var pendingSkip: NegentropyBound?

        rangeLoop: for range in ranges {
            let upper = items.lowerBound(of: range.upperBound, in: lower..<itemCount)
            defer { lower = upper }

            switch range.payload {
            case .skip:
                pendingSkip = range.upperBound

            case .fingerprint(let offset):
                if items.fingerprint(lower..<upper, matches: message, at: offset) {
                    pendingSkip = range.upperBound
                    continue rangeLoop
                }
                let mark = out.mark()
                let skipped = pendingSkip
                appendPendingSkip(&pendingSkip, to: &out)
                appendSplit(lower..<upper, upperBound: range.upperBound, to: &out)
                if exceedsFrame(out) {
                    out.rollback(to: mark)
                    pendingSkip = skipped
                    appendContinuation(from: lower, after: &pendingSkip, to: &out)
                    break rangeLoop
                }

            case .idList(let offset, let count):
                if isInitiator {
                    compare(ids: message, offset: offset, count: count, with: lower..<upper, have: &have, need: &need)
                    pendingSkip = range.upperBound
                    continue rangeLoop
                }
                let mark = out.mark()
                let skipped = pendingSkip
                appendPendingSkip(&pendingSkip, to: &out)
                let sent = appendIdListReply(lower..<upper, upperBound: range.upperBound, to: &out)
                let complete = sent == upper - lower
                if complete, !exceedsFrame(out) { continue rangeLoop }
                // The frame filled up: what was not listed goes into one closing fingerprint.
                // A partial list was sized to leave room for it; anything else is undone.
                if complete || sent == 0 {
                    out.rollback(to: mark)
                    pendingSkip = skipped
                    appendContinuation(from: lower, after: &pendingSkip, to: &out)
                } else {
                    appendContinuation(from: lower + sent, after: &pendingSkip, to: &out)
                }
                break rangeLoop
            }
        }

        if isInitiator {
            return NegentropyStep(have: have, need: need, next: out.count == 1 ? nil : out.bytes)
        }
        return NegentropyStep(next: out.bytes)
    }

    // MARK: - Building replies

    /// Whether `out` leaves too little room to still close the message with a skip and a
    /// continuation fingerprint.
    private func exceedsFrame(_ out: NegentropyMessageWriter) -> Bool {
        frameSizeLimit != 0 && out.count + Self.maxBoundBytes + 1 + Self.continuationBytes > frameSizeLimit
    }

    private func appendPendingSkip(_ pendingSkip: inout NegentropyBound?, to out: inout NegentropyMessageWriter) {
        guard let bound = pendingSkip else { return }
        out.append(bound: bound)
        out.append(mode: .skip)
        pendingSkip = nil
    }

    /// Describes our items at `positions` so the peer can compare: an id list when small,
    /// otherwise 16 fingerprinted buckets of near-equal size whose bounds sit between items.
    private func appendSplit(_ positions: Range<Int>, upperBound: NegentropyBound, to out: inout NegentropyMessageWriter) {
        let count = positions.count
        if count < Self.idListThreshold {
            out.append(bound: upperBound)
            out.append(mode: .idList)
            out.append(varint: count)
            for position in positions { out.append(id: items.packed(position).id) }
            return
        }
        let perBucket = count / Self.bucketCount
        let withExtra = count % Self.bucketCount
        var start = positions.lowerBound
        for bucket in 0..<Self.bucketCount {
            let end = start + perBucket + (bucket < withExtra ? 1 : 0)
            let bound = end == positions.upperBound
                ? upperBound
                : NegentropyBound.between(items.packed(end - 1), items.packed(end))
            out.append(bound: bound)
            out.append(mode: .fingerprint)
            out.append(raw: items.fingerprint(start..<end))
            start = end
        }
    }

    /// The responder's answer to an id list: all our ids in the range, or as many as fit the
    /// frame, closed by a bound just after the last one listed. Returns how many were listed.
    private func appendIdListReply(_ positions: Range<Int>, upperBound: NegentropyBound, to out: inout NegentropyMessageWriter) -> Int {
        var listed = positions.count
        if frameSizeLimit != 0 {
            let overhead = Self.maxBoundBytes + 1 + NegentropyVarint.length(UInt64(listed)) + Self.continuationBytes
            let room = max(0, frameSizeLimit - out.count - overhead)
            listed = min(listed, room / NegentropyItem.idLength)
        }
        guard listed > 0 || positions.isEmpty else { return 0 }
        let end = positions.lowerBound + listed
        let bound = end == positions.upperBound ? upperBound : NegentropyBound.between(items.packed(end - 1), items.packed(end))
        out.append(bound: bound)
        out.append(mode: .idList)
        out.append(varint: listed)
        for position in positions.lowerBound..<end { out.append(id: items.packed(position).id) }
        return listed
    }

    /// Ends a message that hit the frame limit: first the skip for ranges already settled (so
    /// the peer does not revisit them, nor report their ids again), then one fingerprint over
    /// everything from `position` to infinity, which the peer answers in the next round.
    private func appendContinuation(from position: Int, after pendingSkip: inout NegentropyBound?, to out: inout NegentropyMessageWriter) {
        appendPendingSkip(&pendingSkip, to: &out)
        out.append(bound: .infinity)
        out.append(mode: .fingerprint)
        out.append(raw: items.fingerprint(position..<items.count))
    }

    // MARK: - Learning differences

    /// Compares the peer's id list with our items in the same range. Their ids go into a set
    /// once; ours are streamed, so memory is bounded by the message, not by our item count.
    private func compare(
        ids message: [UInt8], offset: Int, count: Int, with positions: Range<Int>,
        have: inout [[UInt8]], need: inout [[UInt8]]
    ) {
        func theirID(_ index: Int) -> NegentropyPackedID {
            NegentropyPackedID(message, at: offset + index * NegentropyItem.idLength)
        }
        var unmatched = Set<NegentropyPackedID>(minimumCapacity: count)
        for index in 0..<count { unmatched.insert(theirID(index)) }
        for position in positions {
            let ours = items.packed(position).id
            if unmatched.remove(ours) == nil { have.append(ours.bytes) }
        }
        // Message order keeps the output deterministic; removing makes duplicates report once.
        for index in 0..<count {
            let id = theirID(index)
            if unmatched.remove(id) != nil { need.append(id.bytes) }
        }
    }
}
