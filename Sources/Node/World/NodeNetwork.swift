import Dispatch
import Transport

/// The network as a node uses it: stream listeners and connections for sessions, datagram
/// sockets for pushed records, and a beacon channel for discovery. `SocketNetwork` is the real
/// one (Transport's sockets); every object it makes belongs to the queue given and is used there
/// only, as Transport's classes are.
public protocol NodeNetwork: Sendable {
    /// A listener bound to `address` (port 0: any free port); `v6Only` as IPV6_V6ONLY.
    func listen(_ address: SocketAddress, v6Only: Bool, queue: DispatchQueue) throws -> any StreamListener
    /// Opens a connection; `completion` runs later on `queue`, exactly once.
    func connect(to address: SocketAddress, timeout: DispatchTimeInterval, queue: DispatchQueue,
                 completion: @escaping (Result<any StreamConnection, SocketError>) -> Void)
    /// A datagram socket bound to `address`.
    func bindDatagram(_ address: SocketAddress, v6Only: Bool, queue: DispatchQueue) throws -> any DatagramSocket
    /// Opens discovery for a node configured by `config`; `ipv6` says whether beacons may also go
    /// over IPv6 (only when peers can dial the node there).
    func openBeacons(_ config: NodeConfig, ipv6: Bool, queue: DispatchQueue) throws -> any BeaconChannel
}

/// A byte stream to a peer (TCPConnection's surface as a node uses it; see there for the rules).
public protocol StreamConnection: AnyObject, Sendable {
    var remoteAddress: SocketAddress { get }
    var isClosed: Bool { get }
    /// Bytes written and not yet taken by the network.
    var pendingWriteBytes: Int { get }
    func start(onReadBuffer: @escaping (UnsafeRawBufferPointer) -> Void, onClose: @escaping (SocketError?) -> Void)
    func write(_ bytes: [UInt8])
    func pauseReading()
    func resumeReading()
    /// Calls `body` once every byte written so far has been taken by the network.
    func whenDrained(_ body: @escaping () -> Void)
    func close()
}

/// Accepts stream connections.
public protocol StreamListener: AnyObject, Sendable {
    var localAddress: SocketAddress { get }
    func start(onAccept: @escaping (any StreamConnection) -> Void)
    func close()
}

/// Sends and receives datagrams.
public protocol DatagramSocket: AnyObject, Sendable {
    func start(onDatagram: @escaping ([UInt8], SocketAddress) -> Void)
    func send(_ bytes: [UInt8], to address: SocketAddress) throws
    func close()
}

/// Where beacons go out to every node of the LAN, and where theirs come in.
public protocol BeaconChannel: AnyObject, Sendable {
    func start(onBeacon: @escaping ([UInt8], SocketAddress) -> Void)
    /// Sends one sealed beacon to every node that can hear it.
    func announce(_ datagram: [UInt8])
    func close()
}
