import Crypto
import Dispatch
import Foundation
import Sync
import Transport

/// A node heard through its beacons.
struct DiscoveredPeer {
    let author: PublicKey
    var instance: [UInt8]
    /// Session address: the beacon's source host (with its scope, over IPv6) and announced port.
    var address: SocketAddress
    var lastSeen: Double
    var recordCount: UInt64
    var fingerprint: [UInt8]
    /// When a beacon last came from `address` itself.
    var addressSeen: Double

    /// The session address to keep after a beacon of `instance` from `heard` (source host,
    /// announced port). A peer heard over both IPv4 and IPv6 keeps its IPv4 address while IPv4
    /// beacons keep arriving (within `freshFor` seconds), rather than flipping with every beacon;
    /// IPv6 takes over when it is all that is heard, and a new instance starts afresh.
    static func address(known: DiscoveredPeer?, heard: SocketAddress, instance: [UInt8],
                        now: Double, freshFor: Double) -> SocketAddress {
        guard let known, known.instance == instance, known.address.family == .ipv4, heard.family == .ipv6,
              now - known.addressSeen <= freshFor else { return heard }
        return known.address
    }
}

/// One TCP connection and the session state machine that runs over it.
/// Confined to the node's queue (it only crosses threads inside closures that hop back there).
final class SessionSlot: @unchecked Sendable {
    /// The session's key in `Node.sessions`, unique for the node's lifetime.
    let id: Int
    let connection: any StreamConnection
    var machine: PeerSession
    let outbound: Bool
    var lastActivity: Double
    var established = false
    /// Whether reading is paused until queued output drains (`Node.throttle`).
    var readPaused = false
    /// Whether a part of what the peer is owed (records it lacks, chunks it asked for) is being
    /// served, or waits for the connection to drain (`Node.serveQueued`).
    var serving = false
    /// Batches of received records being verified or waiting to be stored.
    var batchesInFlight = 0
    /// The peer's instance, from its `hello`.
    var peerInstance: [UInt8]?
    /// The manual peer this session serves, if any.
    var manualAddress: SocketAddress?
    /// Records received on this session so far.
    var recordsReceived = 0
    /// Records received here when this node last started a round.
    var receivedAtRoundStart = 0
    /// The ids the last round asked for, when it ended at its cap with more to find: the next
    /// round starts once they have arrived and are stored (`Node.followUpRound`).
    var followUpAsked: Int?
    /// Records received plus records sent, as counted at the previous anti-entropy tick.
    var recordsMovedAtTick = 0
    /// When this node last started a reconciliation round here (when the session opened, before any).
    var roundStartedAt: Double
    /// When the session opened (monotonic seconds).
    let openedAt: Double

    init(id: Int, connection: any StreamConnection, machine: PeerSession, outbound: Bool, now: Double) {
        self.id = id
        self.connection = connection
        self.machine = machine
        self.outbound = outbound
        lastActivity = now
        roundStartedAt = now
        openedAt = now
    }

    /// Whether records are still moving on this session: some arrived or left since the previous
    /// tick, arrived ones wait to be stored, sent ones wait for the peer to read them, or ones
    /// a round found the peer lacks wait to be sent. Takes
    /// the tick's count, so call it once per session and tick.
    func isMovingRecords() -> Bool {
        let moved = recordsReceived + machine.recordsSent
        defer { recordsMovedAtTick = moved }
        return moved != recordsMovedAtTick || batchesInFlight > 0 || connection.pendingWriteBytes > 0
            || machine.recordsToOfferCount > 0
    }

    var peer: PublicKey? { machine.peer }
}

/// What `lanchat peers` and `lanchat status` show.
public struct PeerStatus: Codable, Sendable {
    public var userID: String
    public var name: String
    public var address: String
    public var connected: Bool
    public var discovered: Bool
    public var lastSeenSecondsAgo: Double?
    public var recordCount: UInt64?
    /// The most that the peer's own records, as they arrived on its session, were stamped ahead
    /// of this node's clock, in milliseconds (negative: behind); nil before any arrived.
    public var clockLeadMillis: Int64? = nil
}

public struct NodeStatus: Codable, Sendable {
    public var userID: String
    public var name: String
    public var listen: String
    public var network: String
    public var records: Int
    public var fingerprint: String
    public var peers: [PeerStatus]
    public var pid: Int32
}

/// The system's wall-clock milliseconds since the Unix epoch, for code outside a node (a node
/// reads its world's clock: `Node.wallMillis()`).
func wallMillis() -> UInt64 {
    UInt64(Date().timeIntervalSince1970 * 1000)
}
