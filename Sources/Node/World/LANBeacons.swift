import Dispatch
import Transport

/// Discovery on a real LAN: sealed beacons to the IPv4 multicast group and to each interface's
/// broadcast address, heard on a port that every node of the host shares (SO_REUSEPORT); and,
/// where the node accepts sessions over IPv6, to the IPv6 link-local group on every link-local
/// interface. Confined to `queue`.
final class LANBeacons: BeaconChannel, @unchecked Sendable {
    private let config: NodeConfig
    private let queue: DispatchQueue
    private var ipv4: UDPSocket?
    private var ipv6: UDPSocket?

    /// Binds IPv4 and, with `ipv6`, IPv6 too. Either family alone is enough: a LAN may carry only
    /// one of them. Throws when neither can join its group on any interface.
    init(config: NodeConfig, ipv6 useIPv6: Bool, queue: DispatchQueue) throws {
        self.config = config
        self.queue = queue
        let joinedIPv4 = try openIPv4()
        let joinedIPv6 = useIPv6 && openIPv6()
        guard joinedIPv4 || joinedIPv6 else {
            ipv4?.close()
            ipv4 = nil
            throw DiscoveryError.noInterface(config.discoveryInterfaces)
        }
    }

    /// Binds the IPv4 discovery socket and joins the group; whether any interface joined. The
    /// socket stays even when none did (IPv6 may carry discovery), hearing broadcast beacons.
    private func openIPv4() throws -> Bool {
        let any = try SocketAddress(host: "0.0.0.0", port: config.discoveryPort)
        let socket = try UDPSocket(bind: any, queue: queue, reuseAddress: true, reusePort: true, broadcast: true)
        ipv4 = socket
        let group = try SocketAddress(host: config.multicastGroup, port: config.discoveryPort)
        var joined = 0
        for interface in interfaces() {
            if (try? socket.joinMulticast(group: group, interfaceAddress: interface.address)) != nil { joined += 1 }
        }
        return joined > 0
    }

    /// Binds `[::]` at the discovery port (IPV6_V6ONLY, so IPv4 beacons are not heard twice) and
    /// joins the IPv6 group on every link-local interface; whether any joined. No IPv6, no
    /// link-local interface or a failed bind: no socket, and discovery is IPv4 only, silently.
    private func openIPv6() -> Bool {
        let interfaces = interfacesIPv6()
        guard !interfaces.isEmpty,
              let any = try? SocketAddress(host: "::", port: config.discoveryPort),
              let group = try? SocketAddress(host: config.multicastGroupIPv6, port: config.discoveryPort),
              let socket = try? UDPSocket(bind: any, queue: queue, reuseAddress: true, reusePort: true, v6Only: true)
        else { return false }
        var joined = 0
        for interface in interfaces {
            if (try? socket.joinMulticast(group: group, interfaceIndex: interface.index)) != nil { joined += 1 }
        }
        guard joined > 0 else {
            socket.close()
            return false
        }
        ipv6 = socket
        return true
    }

    func start(onBeacon: @escaping ([UInt8], SocketAddress) -> Void) {
        ipv4?.start(onDatagram: onBeacon)
        ipv6?.start(onDatagram: onBeacon)
    }

    /// Every IPv4 interface, to the multicast group and the broadcast address, and every IPv6
    /// link-local interface, to the IPv6 group.
    func announce(_ datagram: [UInt8]) {
        dispatchPrecondition(condition: .onQueue(queue))
        if let socket = ipv4, let group = try? SocketAddress(host: config.multicastGroup, port: config.discoveryPort) {
            for interface in interfaces() {
                if (try? socket.setMulticastInterface(interface.address)) != nil { try? socket.send(datagram, to: group) }
                if let broadcast = interface.broadcast, let target = try? SocketAddress(host: broadcast.host, port: config.discoveryPort) {
                    try? socket.send(datagram, to: target)
                }
            }
        }
        if let socket = ipv6, let group = try? SocketAddress(host: config.multicastGroupIPv6, port: config.discoveryPort) {
            for interface in interfacesIPv6() {
                if (try? socket.setMulticastInterface(index: interface.index)) != nil { try? socket.send(datagram, to: group) }
            }
        }
    }

    func close() {
        ipv4?.close()
        ipv6?.close()
    }

    /// The interfaces beacons use: all IPv4 ones, or those named in the configuration.
    private func interfaces() -> [Interfaces.IPv4] {
        configured(Interfaces.ipv4(), name: \.name)
    }

    /// The IPv6 link-local interfaces beacons use: all, or those named in the configuration.
    private func interfacesIPv6() -> [Interfaces.IPv6LinkLocal] {
        configured(Interfaces.ipv6LinkLocal(), name: \.name)
    }

    /// `all`, or those of them named in `config.discoveryInterfaces` when it names any.
    private func configured<Interface>(_ all: [Interface], name: (Interface) -> String) -> [Interface] {
        guard !config.discoveryInterfaces.isEmpty else { return all }
        return all.filter { config.discoveryInterfaces.contains(name($0)) }
    }
}
