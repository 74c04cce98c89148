import Dispatch
import Sync
import Transport

/// How a node runs: addresses, discovery, timers and limits (Protocol.md §9 lists the limits).
///
/// The defaults are the protocol's; tests turn each limit down to a fraction of a second or a few
/// bytes to show a node at and just past it (Tests/NodeTests/*KnobTests.swift).
public struct NodeConfig: Sendable {
    /// TCP (and unicast UDP) address for sessions; port 0 picks a free port.
    public var listen: SocketAddress
    /// Beacons on the LAN; off leaves only manual peers.
    public var discovery = true
    /// UDP port beacons are sent to and heard on, shared by every node of a host.
    public var discoveryPort: UInt16 = 47777
    /// Interfaces (by name, e.g. "lo", "eth0") that beacons use; empty means every interface that
    /// can multicast (IPv4, and IPv6 link-local).
    public var discoveryInterfaces: [String] = []
    /// The IPv4 multicast group of beacons.
    public var multicastGroup = "239.255.77.77"
    /// The IPv6 link-local multicast group of beacons, sent on every interface with an IPv6
    /// link-local address when the node also listens on IPv6 (Protocol.md §7).
    public var multicastGroupIPv6 = "ff02::7777"
    /// Peers to keep a session with whether or not they are discovered (routed networks).
    public var manualPeers: [SocketAddress] = []
    /// Time between beacons; a peer unheard for three intervals is lost.
    public var beaconInterval: DispatchTimeInterval = .seconds(2)
    /// Time between anti-entropy rounds, each with one random peer among the sessions this node
    /// dialled (only the dialler of a session starts rounds there).
    public var antiEntropyInterval: DispatchTimeInterval = .seconds(2)
    /// Longest a session still moving records goes without a round started by this node: a round
    /// there would find the records in flight missing and move them a second time.
    public var maxRoundDeferral: Double = 30
    /// A session that has not finished its handshake and hello by then is closed.
    public var handshakeTimeout: DispatchTimeInterval = .seconds(10)
    /// A session with no traffic for this long is closed (checked on each anti-entropy tick, so
    /// it closes at most one interval later).
    public var idleTimeoutSeconds: Double = 120
    /// Most sessions at once, inbound and outbound together, counting those still in their
    /// handshake; a connection past it is closed before its first byte is read.
    public var maxSessions = 64
    /// How long a peer that broke the protocol is ignored.
    public var banSeconds: Double = 60
    /// Records up to this size are also pushed as sealed datagrams to live peers.
    public var datagramRecordBytes = 1000
    /// Bytes of referenced files (photos in messages, profile pictures) fetched without being
    /// asked, counted as whole chunks still missing, at each anti-entropy tick: a file larger than
    /// this is fetched only when asked for.
    public var eagerFetchBytes = 256 << 20
    /// The node's user is away (Protocol.md §5.7) after this long without using the local API.
    public var awayAfterSeconds: Double = 300
    /// Bounds on live values (typing flags, statuses, receipts) held of other users.
    public var liveLimits = LiveTable.Limits()
    /// Where peer events are reported, one line each.
    public var log: @Sendable (String) -> Void = { _ in }
    /// Where peer events are reported with their level; when set, used instead of `log`.
    public var logEntry: (@Sendable (LogLevel, String) -> Void)?

    public init(listen: SocketAddress) {
        self.listen = listen
    }
}

/// How much a log line matters to whoever runs the node.
public enum LogLevel: String, Sendable, CaseIterable {
    /// What the node did: peers found and lost, records synced, files fetched.
    case info
    /// Something went wrong that the node works around: a peer it cannot reach, one it ignores.
    case warning
    /// Something the node could not do: records or chunks it failed to store.
    case error
}
