import Dispatch
import Node
import TestSupport
import Transport
#if canImport(Glibc)
import Glibc
#endif

/// The simulated LAN: which hosts are up, who can reach whom (partitions), and the links'
/// latency, jitter, loss, duplication and bandwidth. Datagrams may be lost, duplicated and
/// reordered; stream bytes arrive in order or, across a partition, wait until it heals (as TCP
/// retransmits), while a host that dies closes its streams as the kernel of a killed process does.
final class Fabric: @unchecked Sendable {
    let loop: EventLoop
    var rng: SplitMix64
    let faults: FaultCounter
    /// One entry per host.
    var hosts: [FabricHost] = []
    /// Partition side of each host: only hosts on the same side reach each other.
    var side: [Int] = []
    /// One-way latency and its random extra, in nanoseconds.
    var latency: UInt64 = 500_000
    var jitter: UInt64 = 200_000
    /// Chance that a datagram is lost, and that one is delivered twice.
    var loss = 0.0
    var duplication = 0.0
    /// Bytes per second a host's link carries (slow peers get less).
    var bandwidth: [Double] = []
    var nextConnectionID = 0
    /// Arrival time of the newest datagram sent on each (from, to) pair, to count reorderings.
    private var lastArrival: [Int: UInt64] = [:]

    init(loop: EventLoop, seed: UInt64, faults: FaultCounter) {
        self.loop = loop
        rng = SplitMix64(seed: seed)
        self.faults = faults
    }

    func addHost() -> Int {
        hosts.append(FabricHost(index: hosts.count))
        side.append(0)
        bandwidth.append(100e6)
        return hosts.count - 1
    }

    static func ip(_ host: Int) -> String { "10.0.\(host / 200).\(host % 200 + 1)" }

    func host(at address: SocketAddress) -> FabricHost? {
        hosts.first { Fabric.ip($0.index) == address.host }
    }

    func reachable(_ a: Int, _ b: Int) -> Bool { side[a] == side[b] && hosts[a].up && hosts[b].up }

    /// One-way delay of `bytes` from `a` to `b` now, with jitter.
    func delay(_ a: Int, _ b: Int, bytes: Int) -> UInt64 {
        let rate = min(bandwidth[a], bandwidth[b])
        return latency + UInt64.random(in: 0...jitter, using: &rng) + UInt64(Double(bytes) / rate * 1e9)
    }

    /// Delivers a datagram from host `from` to `to` (maybe lost, duplicated, reordered).
    func sendDatagram(from: Int, to: Int, bytes: Int, what: String, _ deliver: @escaping () -> Void) {
        guard reachable(from, to) else {
            faults.count(.datagramPartitioned)
            return
        }
        if rng.chance(loss) {
            faults.count(.datagramLost)
            return
        }
        let copies = rng.chance(duplication) ? 2 : 1
        if copies == 2 { faults.count(.datagramDuplicated) }
        for _ in 0..<copies {
            let arrival = loop.now + delay(from, to, bytes: bytes)
            let pair = from * 4096 + to
            if let last = lastArrival[pair], arrival < last { faults.count(.datagramReordered) }
            lastArrival[pair] = max(lastArrival[pair] ?? 0, arrival)
            let target = hosts[to]
            loop.at(arrival, host: to, epoch: target.epoch, "\(what) \(bytes) B from n\(from)", on: target.queue) {
                deliver()
            }
        }
    }

    /// Kills every socket of `host` (its process died): listeners and datagram sockets vanish,
    /// and the far end of each stream reads end of stream once the kernel's FIN arrives.
    func killSockets(of host: Int) {
        let fabricHost = hosts[host]
        for connection in fabricHost.connections { connection.abandon() }
        fabricHost.connections.removeAll()
        // The callbacks go with the process (they hold its node).
        for listener in fabricHost.listeners.values { listener.onAccept = nil }
        for socket in fabricHost.datagrams.values { socket.onDatagram = nil }
        fabricHost.beacons?.onBeacon = nil
        fabricHost.listeners.removeAll()
        fabricHost.datagrams.removeAll()
        fabricHost.beacons = nil
    }
}

/// A simulated machine as the network sees it.
final class FabricHost: @unchecked Sendable {
    let index: Int
    /// The machine is running a node process (false while crashed).
    var up = false
    /// The node process's incarnation: events of earlier ones are dropped.
    var epoch = 0
    /// The node's queue, where its events run.
    var queue: DispatchQueue?
    var listeners: [UInt16: SimListener] = [:]
    var datagrams: [UInt16: SimDatagramSocket] = [:]
    var beacons: SimBeacons?
    var connections: [SimConnection] = []

    init(index: Int) { self.index = index }
}
