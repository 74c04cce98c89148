import Crypto
import Dispatch
import Foundation
import Node
import Store
import Sync
import TestSupport
import Transport

/// One simulated machine: a data directory with real SQLite files, an identity, a clock of its
/// own, and the node process on it, which can crash (dropped without `stop`, like kill -9: what
/// SQLite committed survives, nothing else), restart on the same files, or freeze (a stalled
/// process: its events wait until it thaws).
final class SimHost {
    let index: Int
    let identity: PrivateKey
    let directory: String
    let clock: HostClock
    let hostile: Bool
    private let loop: EventLoop
    private let fabric: Fabric
    private let network: NetworkKey
    private let config: NodeConfig
    private var randomSeed: UInt64
    private(set) var node: Node?
    private var scheduler: HostScheduler?
    /// Events of this host wait until then.
    var frozenUntil: UInt64 = 0
    /// When the current (or last) stall began.
    var frozenSince: UInt64 = 0
    /// When the host last thawed or booted: handshakes may look older than their timeout until
    /// the timers that were held back have run.
    var settledSince: UInt64 = 0
    /// Nodes dropped by crashes, to tell whether each was released (nothing kept it alive).
    var crashedNodes: [WeakNode] = []

    var userID: String { identity.publicKey.userID }
    var up: Bool { node != nil }

    /// Stalls the process for `nanos` from now.
    func freeze(for nanos: UInt64, now: UInt64) {
        if frozenUntil <= now { frozenSince = now }
        frozenUntil = max(frozenUntil, now + nanos)
        settledSince = max(settledSince, frozenUntil)
    }

    init(index: Int, seed: UInt64, loop: EventLoop, fabric: Fabric, network: NetworkKey, root: String,
         wallAtZero: Int64, hostile: Bool) throws {
        self.index = index
        self.loop = loop
        self.fabric = fabric
        self.network = network
        self.hostile = hostile
        var rng = SplitMix64(seed: seed)
        identity = try PrivateKey(seedBytes: (0..<32).map { _ in UInt8.random(in: 0...255, using: &rng) })
        randomSeed = rng.next()
        clock = HostClock(loop: loop, wallAtZero: wallAtZero, bootOffset: Double(rng.next() % 100_000))
        directory = root + "/n\(index)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        var config = NodeConfig(listen: try SocketAddress(host: Fabric.ip(index), port: 7000))
        config.discoveryPort = 47777
        config.log = { [loop] line in loop.note(index, "log: " + line) }
        self.config = config
        _ = fabric.addHost()
    }

    /// Opens the store and starts a node on it (a new process incarnation).
    func boot() throws {
        let fabricHost = fabric.hosts[index]
        fabricHost.epoch += 1
        fabricHost.up = true
        randomSeed = randomSeed &+ 0x9E37_79B9_7F4A_7C15
        let scheduler = HostScheduler(loop: loop, host: index, epoch: fabricHost.epoch)
        self.scheduler = scheduler
        let world = NodeWorld(clock: clock, scheduler: scheduler,
                              network: HostNetwork(fabric: fabric, host: index), random: HostRandom(seed: randomSeed))
        let store = try Store(path: directory + "/store.sqlite")
        let node = try Node(store: store, identity: identity, network: network, config: config, world: world)
        fabricHost.queue = node.queue
        self.node = node
        settledSince = loop.now
        try node.start()
    }

    /// The process dies at once: no `stop`, its sockets vanish, its pending events never run.
    func crash() {
        guard let node else { return }
        fabric.killSockets(of: index)
        scheduler?.cancelAll()
        let fabricHost = fabric.hosts[index]
        fabricHost.up = false
        fabricHost.epoch += 1
        crashedNodes.append(WeakNode(node))
        self.node = nil
    }

    /// Stops the node the orderly way (`Node.stop`, as on SIGTERM), then the process exits.
    func shutdown() {
        guard let node else { return }
        node.stop()
        crashedNodes.append(WeakNode(node))
        self.node = nil
        fabric.killSockets(of: index)
        scheduler?.cancelAll()
        fabric.hosts[index].up = false
        fabric.hosts[index].epoch += 1
    }
}

/// A node that may have been released.
struct WeakNode {
    weak var node: Node?
    init(_ node: Node) { self.node = node }
}
