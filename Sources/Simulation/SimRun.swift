import Crypto
import Foundation
import Node
import SQLite
import Sync
import Wire
import TestSupport

/// How a run is shaped.
public struct SimOptions: Sendable {
    /// Nodes on the LAN (the last one a hostile member when there are three or more).
    public var nodes = 5
    /// Simulated seconds of writes and faults before the network heals.
    public var chaosSeconds = 30.0
    /// Simulated seconds after healing within which the nodes must converge.
    public var maxHealSeconds = 400.0
    /// Honest writes over the chaos phase.
    public var writes = 20
    /// Chance that a seed has a burst of large records toward a stalled peer.
    public var burstChance = 0.2
    /// Print one line per event.
    public var trace = false
    /// A deliberate bug to plant, to show that the invariants catch it.
    public var sabotage: Sabotage?
    /// Where the nodes' data directories go (a directory per run inside).
    public var scratch: String = FileManager.default.fileExists(atPath: "/dev/shm") ? "/dev/shm" : NSTemporaryDirectory()

    public init() {}
}

/// Deliberate bugs, for the test that the invariants catch them.
public enum Sabotage: String, Sendable {
    /// A stored, acknowledged record vanishes from one node's database behind its back.
    case dropRecord = "drop-record"
}

/// What one seed's run came to.
public struct SimResult: Sendable {
    public var seed: UInt64
    public var failure: String?
    public var simulatedSeconds: Double
    public var events: Int
    public var traceDigest: UInt64
    public var faults: [String: Int]
    public var checks: [String: Int]
    public var passed: Bool { failure == nil }
}

/// One seeded run: K nodes (real `Node`, real SQLite) on a simulated LAN, a workload and faults
/// drawn from the seed, then healing, quiescence and the final checks.
public final class SimRun {
    let seed: UInt64
    let options: SimOptions
    let loop = EventLoop()
    let faults = FaultCounter()
    let fabric: Fabric
    var hosts: [SimHost] = []
    var workload: Workload
    var invariants: Invariants
    var rng: SplitMix64
    var failure: String?
    let root: String
    static let driver = -1
    /// 2026-01-01, the simulated wall clock's start.
    static let epochMillis: Int64 = 1_767_225_600_000
    static let driftMillis: Int64 = 5 * 60_000

    public init(seed: UInt64, options: SimOptions) {
        self.seed = seed
        self.options = options
        rng = SplitMix64(seed: seed)
        fabric = Fabric(loop: loop, seed: seed ^ 0x5EED_F00D, faults: faults)
        workload = Workload(seed: seed ^ 0xA11C_E5, faults: faults, loop: loop)
        invariants = Invariants(config: .init(hosts: options.nodes))
        root = options.scratch + "/lanchat-sim-\(getpid())-\(seed)"
        loop.printTrace = options.trace
    }

    public func run() -> SimResult {
        defer {
            for host in hosts { host.shutdown() }
            // The events left hold their closures (and through them the nodes and stores).
            loop.clear()
            hosts.removeAll()
            try? FileManager.default.removeItem(atPath: root)
        }
        do {
            try setUp()
            try chaos()
            if failure == nil { heal() }
            if failure == nil { settle() }
            if failure == nil { failure = invariants.final(hosts, model: workload.model) }
            if failure == nil { checkReleased() }
        } catch {
            fail("the run could not go on: \(error)")
        }
        return SimResult(seed: seed, failure: failure, simulatedSeconds: Double(loop.now) / 1e9, events: loop.executed,
                         traceDigest: loop.trace.value,
                         faults: Dictionary(uniqueKeysWithValues: faults.counts.map { ($0.key.rawValue, $0.value) }),
                         checks: Dictionary(uniqueKeysWithValues: invariants.checks.map { ($0.key.rawValue, $0.value) }))
    }

    func fail(_ message: String) {
        if failure == nil {
            failure = message
            loop.note(Self.driver, "FAILED: " + message)
        }
    }

    // MARK: Phases

    private func setUp() throws {
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        let network = try NetworkKey(bytes: (0..<32).map { _ in UInt8.random(in: 0...255, using: &rng) })
        fabric.latency = UInt64.random(in: 100_000...20_000_000, using: &rng)
        fabric.jitter = UInt64.random(in: 0...fabric.latency, using: &rng)
        fabric.loss = rng.chance(0.7) ? Double.random(in: 0...0.3, using: &rng) : 0
        fabric.duplication = rng.chance(0.5) ? Double.random(in: 0...0.1, using: &rng) : 0
        let count = options.nodes
        for index in 0..<count {
            let hostile = count >= 3 && index == count - 1
            // Within the bound by up to half a minute either way, or (the hostile member, and
            // now and then an honest node) ahead beyond it by seconds: records stamped beyond
            // the bound wait until the receiver's clock catches up, so larger errors would
            // only lengthen the simulated wait, not test more.
            var skew = Int64.random(in: -30_000...30_000, using: &rng)
            if hostile || rng.chance(0.1) {
                skew = Self.driftMillis + Int64.random(in: 2_000...15_000, using: &rng)
                faults.count(.clockSkewBeyond)
            } else if skew != 0 {
                faults.count(.clockSkewWithin)
            }
            hosts.append(try SimHost(index: index, seed: rng.next(), loop: loop, fabric: fabric, network: network, root: root,
                                     wallAtZero: Self.epochMillis + skew, hostile: hostile))
        }
        loop.hostState = { [unowned self] host, epoch in
            guard host >= 0 else { return (true, 0) }
            let state = fabric.hosts[host]
            return (state.up && state.epoch == epoch, hosts[host].frozenUntil)
        }
        loop.afterEvent = { [unowned self] host in afterEvent(host) }
        for host in hosts {
            driver(at: UInt64.random(in: 0...2_000_000_000, using: &rng), "boot n\(host.index)") { try host.boot() }
        }
    }

    /// Ends every fault: partitions, loss, slow links and stalls; restarts crashed nodes.
    private func heal() {
        loop.note(Self.driver, "heal")
        fabric.side = hosts.map { _ in 0 }
        fabric.loss = 0
        fabric.duplication = 0
        for host in hosts {
            fabric.bandwidth[host.index] = 100e6
            if host.frozenUntil > loop.now {
                host.frozenUntil = loop.now
                host.settledSince = loop.now
            }
            if !host.up {
                do { try restart(host) } catch { fail("n\(host.index) could not restart: \(error)") }
            }
        }
    }

    /// Runs until every node holds the same records with nothing in flight, twice in a row a
    /// few seconds apart, or fails after `maxHealSeconds`.
    private func settle() {
        let deadline = loop.now + UInt64(options.maxHealSeconds * 1e9)
        var quietBefore = false
        while failure == nil {
            loop.run(until: loop.now + 2_500_000_000) { failure != nil }
            if failure != nil { return }
            let quiet = isQuiet()
            invariants.tick(.quiescent)
            if quiet && quietBefore { return }
            quietBefore = quiet
            if loop.now > deadline {
                fail("no convergence within \(Int(options.maxHealSeconds)) s of healing: " + describeState())
                return
            }
        }
    }

    private func isQuiet() -> Bool {
        var summaries = Set<[UInt8]>()
        for host in hosts {
            guard let node = host.node else { return false }
            let (summary, gauges) = node.queue.sync { (node.recordSetSummaryOnQueue(), node.gaugesOnQueue()) }
            summaries.insert(summary.fingerprint + withUnsafeBytes(of: summary.count) { Array($0) })
            // A round may be under way (they start every couple of seconds), but none stuck.
            if gauges.handshaking > 0 || gauges.arriving > 0 || gauges.chunksPending > 0 || gauges.oldestRoundSeconds > 10 { return false }
        }
        return summaries.count == 1
    }

    private func describeState() -> String {
        hosts.map { host in
            guard let node = host.node else { return "n\(host.index) down" }
            let gauges = node.queue.sync { node.gaugesOnQueue() }
            return "n\(host.index): \(gauges.records) records, \(gauges.sessions) sessions (\(gauges.handshaking) handshaking), "
                + "\(gauges.arriving) arriving, \(gauges.chunksPending) chunks wanted, oldest round \(Int(gauges.oldestRoundSeconds)) s"
        }.joined(separator: "; ")
    }

    // MARK: Events of the driver

    /// Runs `body` at `time` as an event of the driver (not of any node).
    func driver(at time: UInt64, _ label: String, _ body: @escaping () throws -> Void) {
        loop.at(time, host: Self.driver, epoch: 0, label, on: nil) { [unowned self] in
            do { try body() } catch { fail("\(label): \(error)") }
        }
    }

    func restart(_ host: SimHost) throws {
        guard !host.up else { return }
        try host.boot()
        if let problem = invariants.afterRestart(host, model: workload.model) { fail(problem) }
    }

    /// After every event of a node: its bounds.
    private func afterEvent(_ index: Int) {
        guard index >= 0, failure == nil else { return }
        let host = hosts[index]
        guard let node = host.node else { return }
        let gauges = node.queue.sync { node.gaugesOnQueue() }
        let settled = loop.now >= host.settledSince + 2_000_000_000
        if let problem = invariants.afterEvent(gauges, settled: settled) { fail("n\(index): \(problem)") }
        checkQueuesTowardStalledPeers(index)
    }

    /// Toward a peer whose process has been stalled for a second (so it sent nothing that asks
    /// for more), the bytes queued may grow past what was queued when it stalled only up to
    /// `maxQueuedBytes` and one record: pushes stop there, and reconciliation later brings it
    /// what it missed.
    private func checkQueuesTowardStalledPeers(_ index: Int) {
        for connection in fabric.hosts[index].connections {
            guard let far = connection.peer, hosts[far.host].frozenUntil > loop.now,
                  loop.now >= hosts[far.host].frozenSince + 1_000_000_000 else {
                connection.queuedWhenFarEndStalled = nil
                continue
            }
            invariants.tick(.stalledPeerQueue)
            let base = connection.queuedWhenFarEndStalled ?? connection.pendingWriteBytes
            connection.queuedWhenFarEndStalled = base
            let bound = max(base, Node.maxQueuedBytes) + RecordLimits.maxRecordBytes + SessionMessage.recordBatchBytes
            if connection.pendingWriteBytes > bound {
                fail("n\(index): \(connection.pendingWriteBytes) bytes queued toward stalled n\(far.host), above \(bound)")
                return
            }
        }
    }

    /// Every crashed node was released: nothing (a timer, a socket callback) kept it alive.
    private func checkReleased() {
        loop.dropDeadEvents()
        for host in hosts {
            invariants.tick(.crashedNodeReleased)
            if host.crashedNodes.contains(where: { $0.node != nil }) { fail("a crashed node of n\(host.index) is still alive") }
        }
    }
}
