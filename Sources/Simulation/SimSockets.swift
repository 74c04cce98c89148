import Dispatch
import Node
import Transport

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
