import Dispatch

/// How full the node's tables and queues are, for checks that they stay within their bounds
/// (Protocol.md §9): a simulation reads them after every event, and a status view could show them.
public struct NodeGauges: Sendable, Equatable {
    /// Sessions open, and how many of them have not finished their handshake and hello.
    public var sessions = 0
    public var handshaking = 0
    /// Seconds since the oldest unfinished handshake began (0 when there is none).
    public var oldestHandshakeSeconds = 0.0
    /// Seconds since the oldest reconciliation round still in progress began (0 when none).
    public var oldestRoundSeconds = 0.0
    /// Most bytes queued for one peer and not yet taken by the network.
    public var maxQueuedBytes = 0
    /// Most batches of records one session has between receipt and storage.
    public var maxBatchesInFlight = 0
    /// Records received and not yet stored (being verified, or waiting for the queue).
    public var arriving = 0
    /// Peers known from beacons, peers with a last-heard time, and with a clock lead.
    public var discovered = 0
    public var lastHeard = 0
    public var clockLeads = 0
    /// Chunks wanted and not yet stored, and chunk requests in flight.
    public var chunksPending = 0
    public var chunksInFlight = 0
    /// Records in the node's set.
    public var records = 0

    public init() {}
}

extension Node {
    /// The gauges now. On the node's queue.
    public func gaugesOnQueue() -> NodeGauges {
        dispatchPrecondition(condition: .onQueue(queue))
        var gauges = NodeGauges()
        let now = monotonicSeconds()
        gauges.sessions = sessions.count
        for slot in sessions.values {
            if !slot.established {
                gauges.handshaking += 1
                gauges.oldestHandshakeSeconds = max(gauges.oldestHandshakeSeconds, now - slot.openedAt)
            }
            if slot.machine.isReconciling {
                gauges.oldestRoundSeconds = max(gauges.oldestRoundSeconds, now - slot.roundStartedAt)
            }
            gauges.maxQueuedBytes = max(gauges.maxQueuedBytes, slot.connection.pendingWriteBytes)
            gauges.maxBatchesInFlight = max(gauges.maxBatchesInFlight, slot.batchesInFlight)
        }
        gauges.arriving = arriving.count
        gauges.discovered = discovered.count
        gauges.lastHeard = lastHeard.count
        gauges.clockLeads = clockLead.count
        gauges.chunksPending = fetcher.pendingCount
        gauges.chunksInFlight = fetcher.inFlightCount
        gauges.records = recordSet.count
        return gauges
    }

    /// The size and fingerprint of the node's record set: what its beacons announce.
    public func recordSetSummaryOnQueue() -> (count: Int, fingerprint: [UInt8]) {
        dispatchPrecondition(condition: .onQueue(queue))
        return (recordSet.count, recordSet.fingerprint)
    }
}
