import Dispatch
import Node
import Transport
#if canImport(Glibc)
import Glibc
#endif

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
