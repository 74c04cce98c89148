import Crypto

/// Schedules chunk fetches across peers (sans-IO): which chunks to ask which peer for, with a
/// bounded number in flight per peer so requests are pipelined over several peers at once. A
/// chunk a peer lacks is asked of another; one that timed out or came back wrong is asked again
/// elsewhere. The node feeds it events and carries out the requests it returns.
public struct ChunkFetcher<Peer: Hashable> {
    /// Requests in flight per peer.
    public let window: Int
    /// A peer is asked again once at least this many slots of its window are free, so requests
    /// go out in batches rather than one per answer: each request costs the peer a wakeup, a
    /// read, a seal and a write (measured on a 20 MiB fetch over loopback: a window of 64 asked
    /// again at half took 6-13% less CPU than 16 asked again at each answer, in three
    /// comparisons of 25-30 fetches each).
    public let batch: Int
    /// Seconds after which an unanswered request is given to another peer.
    public let timeout: Double

    private var queue: [Digest32] = []
    /// Queued chunks that every current peer lacks, set aside so that `schedule` does not walk
    /// them on every call: a node that references files no peer holds (yet) would otherwise
    /// pay for all of them on every chunk event and every batch of records. They go back to
    /// the queue when a peer joins or the lacks are forgotten, the only ways one can be asked.
    private var parked: [Digest32] = []
    private var wanted = Set<Digest32>()
    private var inFlight: [Digest32: (peer: Peer, since: Double)] = [:]
    private var outstanding: [Peer: Int] = [:]
    private var lacking: [Digest32: Set<Peer>] = [:]
    private var peers: [Peer] = []
    private var nextPeer = 0
    /// Seconds that must pass after the last `forgetLacksAfterStall` before the next: 0 until
    /// the first stall, then doubled at each stall without a chunk arriving in between.
    private var stallBackoff: Double = 0
    private var nextForget: Double = -.infinity

    /// The wait after a first stall before the lacks are forgotten again, and the longest wait.
    public static var firstStallBackoff: Double { 2 }
    public static var maxStallBackoff: Double { 300 }

    public init(window: Int = 16, batch: Int = 1, timeout: Double = 10) {
        precondition(window >= 1 && (1...window).contains(batch), "a window of at least 1, asked again in batches that fit it")
        self.window = window
        self.batch = batch
        self.timeout = timeout
    }

    /// Chunks still wanted (queued or in flight).
    public var pendingCount: Int { wanted.count }
    /// Requests sent and not answered yet.
    public var inFlightCount: Int { inFlight.count }
    public func isWanted(_ hash: Digest32) -> Bool { wanted.contains(hash) }

    /// Adds chunks to fetch (already wanted ones are ignored).
    public mutating func want(_ hashes: [Digest32]) {
        for hash in hashes where wanted.insert(hash).inserted { queue.append(hash) }
    }

    public mutating func peerJoined(_ peer: Peer) {
        guard !peers.contains(peer) else { return }
        peers.append(peer)
        outstanding[peer] = 0
        unpark()
        // A new peer is in no chunk's `lacking` set, so it is asked for what others lacked,
        // while the peers known to lack a chunk (or to have sent a bad copy) are not asked again.
    }

    public mutating func peerLeft(_ peer: Peer) {
        peers.removeAll { $0 == peer }
        outstanding.removeValue(forKey: peer)
        for (hash, flight) in inFlight where flight.peer == peer { requeue(hash) }
        // Forget what is known of it: a later peer may reuse its identifier.
        for (hash, peers) in lacking where peers.contains(peer) {
            var rest = peers
            rest.remove(peer)
            lacking[hash] = rest.isEmpty ? nil : rest
        }
    }

    /// A chunk arrived from `peer` and was stored (the caller checked its hash).
    public mutating func received(_ hash: Digest32, from peer: Peer) {
        if let flight = inFlight.removeValue(forKey: hash) {
            outstanding[flight.peer, default: 1] -= 1
        } else {
            queue.removeAll { $0 == hash }  // a chunk in flight is not queued: no scan then
            parked.removeAll { $0 == hash }
        }
        wanted.remove(hash)
        lacking.removeValue(forKey: hash)
        // Progress: a stall after this one is retried soon again.
        stallBackoff = 0
        nextForget = -.infinity
    }

    /// `peer` does not hold these chunks: ask someone else.
    public mutating func missing(_ hashes: [Digest32], at peer: Peer) {
        for hash in hashes {
            lacking[hash, default: []].insert(peer)
            if let flight = inFlight[hash], flight.peer == peer { requeue(hash) }
        }
    }

    /// A chunk from `peer` did not match its hash: ask someone else (the caller penalises the peer).
    public mutating func rejected(_ hash: Digest32, from peer: Peer) {
        lacking[hash, default: []].insert(peer)
        if inFlight[hash]?.peer == peer { requeue(hash) }
    }

    private mutating func requeue(_ hash: Digest32) {
        if let flight = inFlight.removeValue(forKey: hash) { outstanding[flight.peer, default: 1] -= 1 }
        if wanted.contains(hash) { queue.insert(hash, at: 0) }
    }

    /// The requests to send now: for each peer with room in its window, chunks it is not known
    /// to lack, spread round-robin over the peers.
    public mutating func schedule(now: Double) -> [(peer: Peer, hashes: [Digest32])] {
        for (hash, flight) in inFlight where now - flight.since > timeout {
            lacking[hash, default: []].insert(flight.peer)
            requeue(hash)
        }
        guard !peers.isEmpty, !queue.isEmpty else { return [] }
        // No window with a batch's room (the usual case while chunks stream in): nothing to do.
        guard peers.contains(where: { (outstanding[$0] ?? 0) <= window - batch }) else { return [] }
        var requests: [Peer: [Digest32]] = [:]
        var deferred: [Digest32] = []
        var next = 0
        while next < queue.count {
            let hash = queue[next]
            next += 1
            let excluded = lacking[hash] ?? []
            var chosen: Peer?
            for offset in 0..<peers.count {
                let peer = peers[(nextPeer + offset) % peers.count]
                if !excluded.contains(peer), (outstanding[peer] ?? 0) < window {
                    chosen = peer
                    nextPeer = (nextPeer + offset + 1) % peers.count
                    break
                }
            }
            guard let peer = chosen else {
                if peers.allSatisfy(excluded.contains) {
                    parked.append(hash)
                    continue
                }
                deferred.append(hash)
                if peers.allSatisfy({ (outstanding[$0] ?? 0) >= window }) { break }
                continue
            }
            inFlight[hash] = (peer, now)
            outstanding[peer, default: 0] += 1
            requests[peer, default: []].append(hash)
        }
        // In place: building a new queue would retain and release every digest in it, on every
        // chunk that arrives.
        queue.replaceSubrange(0..<next, with: deferred)
        return requests.map { ($0.key, $0.value) }
    }

    /// Forgets which peers lacked which chunks, so they are asked again (peers fetch too, and a
    /// peer that timed out may answer now). The node calls it when the fetch has stalled.
    public mutating func forgetLacks() {
        lacking.removeAll()
        unpark()
    }

    /// Forgets the lacks after the fetch has stalled (chunks wanted, none in flight), unless it
    /// did so less than the backoff ago; returns whether it did. The backoff starts at
    /// `firstStallBackoff` and doubles up to `maxStallBackoff` at each stall without a chunk
    /// arriving in between. Why: chunks that no peer holds (a large write whose content its
    /// author never served, a file nobody kept) would otherwise be asked of every peer at every
    /// tick, forever: up to tens of thousands of hashes per large write record.
    @discardableResult
    public mutating func forgetLacksAfterStall(now: Double) -> Bool {
        guard now >= nextForget else { return false }
        forgetLacks()
        stallBackoff = stallBackoff == 0 ? Self.firstStallBackoff : min(2 * stallBackoff, Self.maxStallBackoff)
        nextForget = now + stallBackoff
        return true
    }

    /// Puts the parked chunks back at the front of the queue (they were wanted before the rest).
    private mutating func unpark() {
        guard !parked.isEmpty else { return }
        queue.insert(contentsOf: parked, at: 0)
        parked.removeAll()
    }
}
