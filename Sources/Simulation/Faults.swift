/// The faults a run injects, counted by kind for the campaign's report.
enum FaultKind: String, CaseIterable, Sendable {
    case datagramLost = "datagram lost"
    case datagramDuplicated = "datagram duplicated"
    case datagramReordered = "datagram reordered"
    case datagramPartitioned = "datagram dropped by a partition"
    case partition = "partition"
    case crash = "crash (kill -9) and restart"
    case restart = "orderly stop and restart"
    case freeze = "stalled process"
    case slowLink = "slow link"
    case clockSkewWithin = "clock skew within the drift bound"
    case clockSkewBeyond = "clock skew beyond the drift bound"
    case clockJump = "clock jump"
    case hostileRecord = "hostile record"
    case hostileBackdated = "hostile record backdated"
    case hostileFuture = "hostile record ahead beyond the drift bound"
    case largeRecord = "large record (>= 100 KB)"
    case photo = "photo (chunked file)"
    case droppedRecord = "stored record silently dropped (deliberate bug)"
}

/// Counts of faults by kind.
final class FaultCounter: @unchecked Sendable {
    private(set) var counts: [FaultKind: Int] = [:]

    func count(_ kind: FaultKind, _ n: Int = 1) { counts[kind, default: 0] += n }

    func merge(_ other: FaultCounter) {
        for (kind, n) in other.counts { counts[kind, default: 0] += n }
    }
}

/// The invariants checked, by kind, with how often each was checked.
enum InvariantKind: String, CaseIterable, Sendable {
    case bounds = "queues and tables within their bounds (after every event)"
    case stalledPeerQueue = "bytes queued toward a stalled peer stop growing past the limit (after every event)"
    case noStuckHandshake = "no session stuck in its handshake past the timeout (after every event)"
    case ackedSurvivesCrash = "acknowledged writes survive a crash (at every restart)"
    case convergence = "same record set and tree hash on every node after healing"
    case ackedEverywhere = "every acknowledged write on every node"
    case ownersOnly = "no user's profile or messages changed by another"
    case filesComplete = "every referenced photo complete on every node"
    case memoryMatchesDisk = "the node's record set matches its store"
    case quiescent = "quiescent after healing (nothing arriving, no handshake, no chunk wanted, no round stuck)"
    case crashedNodeReleased = "a crashed node's memory is released"
}
