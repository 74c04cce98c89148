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

/// The network as one host incarnation's node sees it.
struct HostNetwork: NodeNetwork, @unchecked Sendable {
    let fabric: Fabric
    let host: Int

    func listen(_ address: SocketAddress, v6Only: Bool, queue: DispatchQueue) throws -> any StreamListener {
        guard address.host == Fabric.ip(host) else { throw SocketError.invalidAddress("not this host's address: \(address)") }
        let me = fabric.hosts[host]
        let port = address.port == 0 ? UInt16(40000 + me.listeners.count) : address.port
        guard me.listeners[port] == nil else { throw SocketError.system(call: "bind", errno: EADDRINUSE) }
        let listener = SimListener(fabric: fabric, host: host, address: address.withPort(port))
        me.listeners[port] = listener
        return listener
    }

    func connect(to address: SocketAddress, timeout: DispatchTimeInterval, queue: DispatchQueue,
                 completion: @escaping (Result<any StreamConnection, SocketError>) -> Void) {
        let loop = fabric.loop
        let me = fabric.hosts[host]
        let epoch = me.epoch
        guard let target = fabric.host(at: address) else {
            loop.at(loop.now + fabric.latency, host: host, epoch: epoch, "connect: no route", on: queue) {
                completion(.failure(.system(call: "connect", errno: EHOSTUNREACH)))
            }
            return
        }
        let there = target.index
        guard fabric.reachable(host, there) || !fabric.hosts[there].up else {
            // No answer across a partition: the attempt times out.
            loop.at(loop.now + timeout.nanoseconds, host: host, epoch: epoch, "connect to n\(there): timed out", on: queue) {
                completion(.failure(.timedOut))
            }
            return
        }
        let rtt = fabric.delay(host, there, bytes: 60) + fabric.delay(there, host, bytes: 60)
        guard target.up, let listener = target.listeners[address.port] else {
            loop.at(loop.now + rtt, host: host, epoch: epoch, "connect to n\(there): refused", on: queue) {
                completion(.failure(.system(call: "connect", errno: ECONNREFUSED)))
            }
            return
        }
        fabric.nextConnectionID += 1
        let id = fabric.nextConnectionID
        let local = try! SocketAddress(host: Fabric.ip(host), port: UInt16(50000 + id % 10000))
        let client = SimConnection(fabric: fabric, host: host, id: id, local: local, remote: address, queue: queue)
        let server = SimConnection(fabric: fabric, host: there, id: id, local: address, remote: local, queue: target.queue!)
        client.peer = server
        server.peer = client
        me.connections.append(client)
        target.connections.append(server)
        let serverEpoch = target.epoch
        loop.at(loop.now + rtt / 2, host: there, epoch: serverEpoch, "accept c\(id) from n\(host)", on: target.queue) {
            guard target.listeners[address.port] === listener else {
                server.close()
                return
            }
            listener.onAccept?(server)
        }
        loop.at(loop.now + rtt, host: host, epoch: epoch, "connected c\(id) to n\(there)", on: queue) {
            completion(.success(client))
        }
    }

    func bindDatagram(_ address: SocketAddress, v6Only: Bool, queue: DispatchQueue) throws -> any DatagramSocket {
        let me = fabric.hosts[host]
        guard me.datagrams[address.port] == nil else { throw SocketError.system(call: "bind", errno: EADDRINUSE) }
        let socket = SimDatagramSocket(fabric: fabric, host: host, address: address)
        me.datagrams[address.port] = socket
        return socket
    }

    func openBeacons(_ config: NodeConfig, ipv6: Bool, queue: DispatchQueue) throws -> any BeaconChannel {
        let channel = SimBeacons(fabric: fabric, host: host, port: config.discoveryPort)
        fabric.hosts[host].beacons = channel
        return channel
    }
}

/// A listening stream socket.
final class SimListener: StreamListener, @unchecked Sendable {
    let fabric: Fabric
    let host: Int
    let localAddress: SocketAddress
    var onAccept: ((any StreamConnection) -> Void)?

    init(fabric: Fabric, host: Int, address: SocketAddress) {
        self.fabric = fabric
        self.host = host
        localAddress = address
    }

    func start(onAccept: @escaping (any StreamConnection) -> Void) { self.onAccept = onAccept }

    func close() {
        onAccept = nil
        let me = fabric.hosts[host]
        if me.listeners[localAddress.port] === self { me.listeners.removeValue(forKey: localAddress.port) }
    }
}

/// A bound datagram socket.
final class SimDatagramSocket: DatagramSocket, @unchecked Sendable {
    let fabric: Fabric
    let host: Int
    let address: SocketAddress
    var onDatagram: (([UInt8], SocketAddress) -> Void)?

    init(fabric: Fabric, host: Int, address: SocketAddress) {
        self.fabric = fabric
        self.host = host
        self.address = address
    }

    func start(onDatagram: @escaping ([UInt8], SocketAddress) -> Void) { self.onDatagram = onDatagram }

    func send(_ bytes: [UInt8], to target: SocketAddress) throws {
        guard let there = fabric.host(at: target) else { return }
        let from = address
        fabric.sendDatagram(from: host, to: there.index, bytes: bytes.count, what: "datagram") { [fabric] in
            guard let socket = fabric.hosts[there.index].datagrams[target.port] else { return }
            socket.onDatagram?(bytes, from)
        }
    }

    func close() {
        onDatagram = nil
        let me = fabric.hosts[host]
        if me.datagrams[address.port] === self { me.datagrams.removeValue(forKey: address.port) }
    }
}

/// Beacons: every announcement goes to every other host's discovery channel, as multicast does.
final class SimBeacons: BeaconChannel, @unchecked Sendable {
    let fabric: Fabric
    let host: Int
    let port: UInt16
    var onBeacon: (([UInt8], SocketAddress) -> Void)?

    init(fabric: Fabric, host: Int, port: UInt16) {
        self.fabric = fabric
        self.host = host
        self.port = port
    }

    func start(onBeacon: @escaping ([UInt8], SocketAddress) -> Void) { self.onBeacon = onBeacon }

    func announce(_ datagram: [UInt8]) {
        let from = try! SocketAddress(host: Fabric.ip(host), port: port)
        for other in fabric.hosts where other.index != host && other.beacons != nil {
            fabric.sendDatagram(from: host, to: other.index, bytes: datagram.count, what: "beacon") { [fabric] in
                fabric.hosts[other.index].beacons?.onBeacon?(datagram, from)
            }
        }
    }

    func close() {
        onBeacon = nil
        if fabric.hosts[host].beacons === self { fabric.hosts[host].beacons = nil }
    }
}
