import Dispatch
import Transport

/// The real network: Transport's TCP and UDP sockets, and beacons over multicast and broadcast
/// (`LANBeacons`).
public struct SocketNetwork: NodeNetwork {
    public init() {}

    public func listen(_ address: SocketAddress, v6Only: Bool, queue: DispatchQueue) throws -> any StreamListener {
        try TCPListener(bind: address, queue: queue, v6Only: v6Only)
    }

    public func connect(to address: SocketAddress, timeout: DispatchTimeInterval, queue: DispatchQueue,
                        completion: @escaping (Result<any StreamConnection, SocketError>) -> Void) {
        TCPConnection.connect(to: address, queue: queue, timeout: timeout) { result in
            completion(result.map { $0 as any StreamConnection })
        }
    }

    public func bindDatagram(_ address: SocketAddress, v6Only: Bool, queue: DispatchQueue) throws -> any DatagramSocket {
        try UDPSocket(bind: address, queue: queue, v6Only: v6Only)
    }

    public func openBeacons(_ config: NodeConfig, ipv6: Bool, queue: DispatchQueue) throws -> any BeaconChannel {
        try LANBeacons(config: config, ipv6: ipv6, queue: queue)
    }
}

extension TCPConnection: StreamConnection {}

extension UDPSocket: DatagramSocket {}

extension TCPListener: StreamListener {
    public func start(onAccept: @escaping (any StreamConnection) -> Void) {
        start(onAccept: { (connection: TCPConnection) in onAccept(connection) })
    }
}
