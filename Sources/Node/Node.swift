import Crypto
import Dispatch
import Foundation
import Store
import Sync
import Transport
import Tree
import Wire

/// The composition root of a running node. One serial queue owns all of its state: transport
/// callbacks, timers and control requests all run there, and feed the sans-IO session machines
/// whose actions are carried out on the store and the sockets.
public final class Node: @unchecked Sendable {
    public let queue = DispatchQueue(label: "lanchat.node")
    let store: Store
    let identity: PrivateKey
    let network: NetworkKey
    let datagramKey: SecretBytes
    public let config: NodeConfig
    /// Clocks, timers, queue hops, sockets and randomness (World/NodeWorld.swift).
    public let world: NodeWorld
    /// Random per start: tells peers (and ourselves, on loopback) this process apart.
    let instance: [UInt8]

    /// The record set once taken from `recordSetLoad` (RecordSetLoad.swift); use `recordSet`.
    private(set) var loadedRecordSet: RecordSet?
    /// Whether the first beacon waits for the record set it announces (NodeDiscovery.swift).
    var firstBeaconWaiting = false
    private let recordSetLoad: RecordSetLoad
    /// Every record's (clock, id) for reconciliation, loaded beside the queue as the node starts
    /// and waited for by the first use.
    var recordSet: RecordSet {
        // Read in place (a borrow) rather than returned as a copy: `holds` asks it once per
        // incoming record, and a copy retains and releases each of its buffers.
        _read { takeRecordSet(); yield loadedRecordSet! }
        _modify { takeRecordSet(); yield &loadedRecordSet! }
    }
    /// Arrival number of the newest record this node has handled (others may be written by the
    /// CLI in another process; they are picked up and pushed by `pickUpLocalWrites`).
    var handledSequence: Int64
    /// Arrival numbers of the records this node stored itself (already in `recordSet`) that
    /// `pickUpLocalWrites` has not passed yet; it drops each as it passes it.
    var storedHere = Set<Int64>()
    var listener: (any StreamListener)?
    var sessionSocket: (any DatagramSocket)?
    /// Beacons out and in (NodeDiscovery.swift); nil with discovery off.
    var beacons: (any BeaconChannel)?
    /// With an IPv4 wildcard listen address, the same port on `[::]` (NodeDualStack.swift);
    /// nil where IPv6 is unavailable.
    var listenerIPv6: (any StreamListener)?
    var sessionSocketIPv6: (any DatagramSocket)?
    var timers: [any Cancellable] = []
    /// Sessions by `SessionSlot.id`: numbers given in order, so that going through them is in
    /// the same order in every run of a simulation (object addresses would differ).
    var sessions: [Int: SessionSlot] = [:]
    /// The id of the next session.
    var nextSessionID = 0
    var discovered: [PublicKey: DiscoveredPeer] = [:]
    /// Peers that broke the protocol, ignored for a while (NodeBans.swift).
    var bans = BanList()
    var manualRetry: [SocketAddress: Double] = [:]
    /// Which chunks to fetch from which session: 4 MiB in flight per peer, asked for 2 MiB at a
    /// time (Protocol.md §8.5).
    var fetcher = ChunkFetcher<Int>(window: 64, batch: 32)
    /// Files being fetched, by storage path, for the log line when each completes.
    var fileFetches: [String: FileFetch] = [:]
    /// The last row of the store's file references read by `fetchReferencedFiles`.
    var fileRefsRead: Int64 = 0
    /// Referenced files left over when the eager quota of a turn ran out, wanted at the next.
    var filesOverQuota = Set<String>()
    /// The store's connection for fetched chunks, used by `chunkIntake` only.
    let chunkWriter: ChunkWriter
    /// Where arrived chunks are checked against their hashes and stored, beside the node's queue.
    lazy var chunkIntake = ChunkIntake(writer: chunkWriter, nodeQueue: queue, scheduler: world.scheduler) { [weak self] in
        self?.chunksChecked($0)
    }
    /// When each peer was last heard from (beacon or session), in wall-clock milliseconds.
    var lastHeard: [PublicKey: UInt64] = [:]
    /// How far ahead of this node's clock each connected peer's own records arrive (NodeClockLead.swift).
    var clockLead: [PublicKey: Int64] = [:]
    /// Peers being dialled (from beacons) whose connection is not established yet.
    var dialing = Set<PublicKey>()
    var running = false
    /// The store's newest arrival number at the previous anti-entropy tick (idle detection).
    var sequenceAtLastTick: Int64 = -1
    /// Verified batches of records waiting for the queue to store them (`storeVerified`).
    var verified: [(records: [Record], opened: [OpenedSealedWrite?]?, slot: SessionSlot, ids: [Digest32])] = []
    /// Whether a `storeVerified` is queued already.
    var storeScheduled = false
    /// Batches handed to the verifiers whose result has not come back to the queue yet.
    var verifying = 0
    /// CPU seconds the queue spent storing received batches (`storeVerified`): the serial part
    /// of taking records in, which bounds a sync however many cores verify.
    var storingCPU = 0.0
    /// The error of the last batch of records the store refused (a full or failing disk), until
    /// a batch is stored again: logged once, not for every batch of every round.
    var storeFailure: String?
    /// Ids of the records received and not yet stored (being verified, or in `verified`).
    var arriving = Set<Digest32>()
    var observers: [Int: ([Record]) -> Void] = [:]
    var nextObserverID = 0
    /// One-time login tokens and web sessions of the local API's web app (NodeLogin.swift).
    var login = NodeLoginState()
    public private(set) var listenAddress: SocketAddress
    /// Live values held: typing flags, statuses, read receipts (NodeLive.swift).
    var live = LiveTable()
    /// The version of this node's latest live value.
    var liveVersion: UInt64 = 0
    /// Sealed live values of private conversations this node cannot open, relayed once each (§11.8).
    var sealedRelay = SealedLiveRelay()
    /// Sealed live values whose epoch's key record has not arrived, with when they came
    /// (monotonic seconds): opened if it arrives within `pendingSealedSeconds`.
    var pendingSealed: [(value: SealedLive, arrived: Double, slot: Int?)] = []
    /// The one-shot timer armed at the next moment a peer is lost or a relayed value expires
    /// (NodeLive.swift, `armLivenessTimer`), and that moment (monotonic seconds).
    var livenessTimer: (any Cancellable)?
    var livenessDeadline: Double?
    /// The one-shot timer of the key record trials waiting for budget (NodeKeyTrials.swift).
    var keyTrialTimer: (any Cancellable)?
    /// The store's `membershipGeneration` when the private live values shown were last checked.
    var liveCheckedGeneration = -1
    var liveObservers: [Int: ([Path], [String]) -> Void] = [:]
    /// Receipts and last-seen times kept across restarts; nil if its file cannot be opened.
    let liveStore: LiveStore?
    /// Receipts changed since they were last written to `liveStore`, by path.
    var receiptsToKeep = Set<Path>()
    /// When each user was last seen, from `liveStore` and since: wall-clock milliseconds.
    var lastSeenKept: [String: Int64] = [:]
    /// When the node's user last used the local API (monotonic seconds): idle for
    /// `config.awayAfterSeconds`, the user is away.
    var lastLocalActivity: Double = 0
    /// Whether this node has published its user's `away` status.
    var awayPublished = false

    public var userID: String { identity.publicKey.userID }

    public init(store: Store, identity: PrivateKey, network: NetworkKey, config: NodeConfig, world: NodeWorld = .system) throws {
        _ = Node.mallocArenasLimited
        self.store = store
        self.world = world
        instance = world.random.bytes(Beacon.instanceByteCount)
        // The node shows the private conversations its user is a member of (Protocol.md §11),
        // trying key records' boxes under budgets that run on the world's monotonic clock.
        let clock = world.clock
        store.keyTrialMillis = { UInt64(max(0, clock.monotonicSeconds() * 1_000)) }
        try store.usePrivateKeys(of: identity)
        try store.checkpointInBackground()
        chunkWriter = try store.chunkWriter()
        self.identity = identity
        self.network = network
        self.config = config
        datagramKey = network.datagramKey
        handledSequence = try store.lastSequence()
        recordSetLoad = RecordSetLoad(reader: store.recordKeyReader, through: handledSequence)
        listenAddress = config.listen
        live = LiveTable(limits: config.liveLimits)
        liveStore = try? LiveStore(forStoreAt: store.path)
        loadLiveState()
        let load = recordSetLoad
        world.scheduler.async(on: RecordSetLoad.queue) { [weak self] in
            load.run()
            guard let self else { return }
            world.scheduler.async(on: queue) { [self] in recordSetLoaded() }
        }
    }

    /// The set is read: taken at once, and announced if the first beacon waited for it.
    private func recordSetLoaded() {
        takeRecordSet()
        if firstBeaconWaiting, running {
            firstBeaconWaiting = false
            sendBeacon()
        }
    }

    private func takeRecordSet() {
        dispatchPrecondition(condition: .onQueue(queue))
        guard loadedRecordSet == nil else { return }
        do {
            loadedRecordSet = try recordSetLoad.take()
        } catch {
            // The store could not be read a moment after it opened: peers' records are asked
            // for again (and found held when stored) rather than the node stopping.
            log("could not read the record set: \(error)", level: .error)
            loadedRecordSet = RecordSet()
        }
    }

    /// Binds the sockets and starts the timers. Call from any thread except the node's queue.
    public func start() throws {
        try queue.sync {
            let listener = try world.network.listen(config.listen, v6Only: false, queue: queue)
            self.listener = listener
            listenAddress = listener.localAddress
            listener.start { [self] connection in accept(connection) }
            // A unicast UDP socket on the session port, for records pushed as datagrams.
            let udp = try world.network.bindDatagram(listenAddress, v6Only: false, queue: queue)
            sessionSocket = udp
            udp.start { [self] bytes, from in receiveDatagram(bytes, from: from) }
            listenOnIPv6Too()
            if config.discovery { try startDiscovery() }
            running = true
            timers.append(world.scheduler.every(config.antiEntropyInterval, on: queue) { [self] in antiEntropyTick() })
            lastLocalActivity = monotonicSeconds()
            startLiveTimers()
            armKeyTrialTimer()
            for peer in config.manualPeers { connect(to: peer, expected: nil, manual: true) }
        }
    }

    /// Closes every session and socket. Safe to call twice.
    public func stop() {
        queue.sync {
            guard running else { return }
            clearOwnLiveValues()
            keepLiveState()
            running = false
            for timer in timers { timer.cancel() }
            timers.removeAll()
            livenessTimer?.cancel()
            livenessTimer = nil
            keyTrialTimer?.cancel()
            keyTrialTimer = nil
            for slot in sessions.values { slot.connection.close() }
            sessions.removeAll()
            listener?.close()
            sessionSocket?.close()
            beacons?.close()
            listenerIPv6?.close()
            sessionSocketIPv6?.close()
        }
    }

    // MARK: Clocks

    /// Wall-clock milliseconds since the Unix epoch, for record clocks.
    public func wallMillis() -> UInt64 { world.clock.wallMillis() }

    /// Seconds on the monotonic clock, for timeouts and expiry.
    func monotonicSeconds() -> Double { world.clock.monotonicSeconds() }

    // MARK: Names and logging

    /// "Alice Smith (abcd1234)" for logs.
    func describe(_ author: PublicKey) -> String {
        let short = String(author.userID.prefix(8))
        guard let name = try? store.displayName(ofUser: author.userID) else { return short }
        return "\(name) (\(short))"
    }

    func log(_ line: String, level: LogLevel = .info) {
        if let entry = config.logEntry { entry(level, line) } else { config.log(line) }
    }

    // MARK: Status

    /// A snapshot for `lanchat status` and `lanchat peers`.
    public func status() -> NodeStatus {
        queue.sync { statusOnQueue() }
    }

    /// `status()` for callers on the node's queue (the control channel, the local API).
    public func statusOnQueue() -> NodeStatus {
        dispatchPrecondition(condition: .onQueue(queue))
        let now = monotonicSeconds()
            var peers = [PublicKey: PeerStatus]()
            for (author, peer) in discovered {
                peers[author] = PeerStatus(userID: author.userID, name: describe(author), address: peer.address.description,
                                           connected: false, discovered: true, lastSeenSecondsAgo: now - peer.lastSeen,
                                           recordCount: peer.recordCount)
            }
            for slot in sessions.values where slot.established {
                guard let author = slot.peer else { continue }
                var entry = peers[author] ?? PeerStatus(userID: author.userID, name: describe(author),
                                                        address: slot.connection.remoteAddress.description, connected: true,
                                                        discovered: false, lastSeenSecondsAgo: nil, recordCount: nil)
                entry.connected = true
                entry.clockLeadMillis = clockLead[author]
                peers[author] = entry
            }
            return NodeStatus(userID: userID, name: describe(identity.publicKey), listen: listenAddress.description,
                              network: network.fingerprint, records: recordSet.count,
                              fingerprint: Hex.encode(recordSet.fingerprint),
                              peers: peers.values.sorted { $0.name < $1.name }, pid: getpid())
    }
}
