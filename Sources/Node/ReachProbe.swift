import Crypto
import Dispatch
import Foundation
import Transport
#if canImport(Glibc)
import Glibc
#endif

/// What `lanchat doctor` finds out about discovery on this host by sending datagrams to itself:
/// through each interface, to the beacon group and to the interface's broadcast address, on the
/// discovery port and, for comparison, on a free port. A datagram sent out of an interface to a
/// group it joined, or to its broadcast address, comes back to the sender through the input
/// path of that interface, where a firewall sees it as it would see a peer's beacon; so when the
/// free port hears its probes and the discovery port does not, something drops that port.
///
/// The probes are random bytes that no network key opens: nodes hearing them drop them.
public enum ReachProbe {
    /// An IPv4 interface that beacons may use.
    public struct Interface: Sendable {
        public let name: String
        public let address: String
        public let broadcast: String?
        public let isLoopback: Bool
    }

    /// What came back through one interface.
    public struct Result: Sendable {
        public let interface: Interface
        /// Multicast and broadcast probes heard on the discovery port.
        public var multicast = false
        public var broadcast = false
        /// The same probes, heard on a free port.
        public var multicastControl = false
        public var broadcastControl = false

        public var discoveryHeard: Bool { multicast || broadcast }
        public var controlHeard: Bool { multicastControl || broadcastControl }
    }

    /// Every IPv4 interface that is up and can multicast (or is loopback).
    public static func interfaces() -> [Interface] {
        Interfaces.ipv4().map {
            Interface(name: $0.name, address: $0.address.host, broadcast: $0.broadcast?.host, isLoopback: $0.address.host.hasPrefix("127."))
        }
    }

    /// Sends the probes through `interfaces` and waits up to `waitSeconds` for them. Throws when
    /// the discovery port cannot be bound the way nodes bind it (SO_REUSEPORT), which means
    /// another program holds it.
    public static func run(port: UInt16, group: String = "239.255.77.77", interfaces: [Interface],
                           waitSeconds: Double = 1.5) throws(SocketError) -> [Result] {
        let queue = DispatchQueue(label: "lanchat.doctor.probe")
        let discovery = try UDPSocket(bind: try SocketAddress(host: "0.0.0.0", port: port), queue: queue,
                                      reuseAddress: true, reusePort: true, broadcast: true)
        let control = try UDPSocket(bind: try SocketAddress(host: "0.0.0.0", port: 0), queue: queue,
                                    reuseAddress: true, reusePort: true, broadcast: true)
        defer { queue.sync { discovery.close(); control.close() } }
        let heard = UncheckedSendable(HeardProbes())
        // probe bytes -> (interface index, kind): 0 multicast, 1 broadcast, 2 multicast control, 3 broadcast control
        var probes = [[UInt8]: (Int, Int)]()
        queue.sync {
            for socket in [discovery, control] {
                for interface in interfaces {
                    if let local = try? SocketAddress(host: interface.address, port: 0),
                       let groupAddress = try? SocketAddress(host: group, port: 0) {
                        try? socket.joinMulticast(group: groupAddress, interfaceAddress: local)
                    }
                }
                socket.start { bytes, _ in heard.value.bytes.insert(bytes) }
            }
            for (index, interface) in interfaces.enumerated() {
                for (kind, socket, targetPort) in [(0, discovery, port), (2, control, control.localAddress.port)] {
                    guard let local = try? SocketAddress(host: interface.address, port: 0) else { continue }
                    let multicastProbe = probeBytes()
                    probes[multicastProbe] = (index, kind)
                    if (try? socket.setMulticastInterface(local)) != nil,
                       let target = try? SocketAddress(host: group, port: targetPort) {
                        try? socket.send(multicastProbe, to: target)
                    }
                    if let broadcast = interface.broadcast, let target = try? SocketAddress(host: broadcast, port: targetPort) {
                        let broadcastProbe = probeBytes()
                        probes[broadcastProbe] = (index, kind + 1)
                        try? socket.send(broadcastProbe, to: target)
                    }
                }
            }
        }
        let deadline = Date().addingTimeInterval(waitSeconds)
        while Date() < deadline {
            let all = queue.sync { probes.keys.allSatisfy { heard.value.bytes.contains($0) } }
            if all { break }
            usleep(50_000)
        }
        var results = interfaces.map { Result(interface: $0) }
        queue.sync {
            for (bytes, (index, kind)) in probes where heard.value.bytes.contains(bytes) {
                switch kind {
                case 0: results[index].multicast = true
                case 1: results[index].broadcast = true
                case 2: results[index].multicastControl = true
                default: results[index].broadcastControl = true
                }
            }
        }
        return results
    }

    /// An interface with an IPv6 link-local address, which IPv6 beacons use.
    public struct InterfaceIPv6: Sendable {
        public let name: String
        public let index: UInt32
    }

    /// What came back through one interface over IPv6 link-local multicast.
    public struct ResultIPv6: Sendable {
        public let interface: InterfaceIPv6
        public var heard = false
        public var controlHeard = false
    }

    public static func interfacesIPv6() -> [InterfaceIPv6] {
        Interfaces.ipv6LinkLocal().map { InterfaceIPv6(name: $0.name, index: $0.index) }
    }

    /// The IPv6 half of `run`: probes to the IPv6 beacon group through each interface, on the
    /// discovery port and on a free port. Nil when IPv6 sockets cannot be had here at all.
    public static func runIPv6(port: UInt16, group: String = "ff02::7777", interfaces: [InterfaceIPv6],
                               waitSeconds: Double = 1.5) -> [ResultIPv6]? {
        let queue = DispatchQueue(label: "lanchat.doctor.probe6")
        guard let discovery = try? UDPSocket(bind: SocketAddress(host: "::", port: port), queue: queue,
                                             reuseAddress: true, reusePort: true, v6Only: true),
              let control = try? UDPSocket(bind: SocketAddress(host: "::", port: 0), queue: queue,
                                           reuseAddress: true, reusePort: true, v6Only: true),
              let groupAddress = try? SocketAddress(host: group, port: port),
              let controlGroup = try? SocketAddress(host: group, port: control.localAddress.port) else { return nil }
        defer { queue.sync { discovery.close(); control.close() } }
        let heard = UncheckedSendable(HeardProbes())
        var probes = [[UInt8]: (Int, Bool)]()
        queue.sync {
            for socket in [discovery, control] {
                for interface in interfaces { try? socket.joinMulticast(group: groupAddress, interfaceIndex: interface.index) }
                socket.start { bytes, _ in heard.value.bytes.insert(bytes) }
            }
            for (index, interface) in interfaces.enumerated() {
                for (isControl, socket, target) in [(false, discovery, groupAddress), (true, control, controlGroup)] {
                    let probe = probeBytes()
                    probes[probe] = (index, isControl)
                    if (try? socket.setMulticastInterface(index: interface.index)) != nil { try? socket.send(probe, to: target) }
                }
            }
        }
        let deadline = Date().addingTimeInterval(waitSeconds)
        while Date() < deadline, !queue.sync(execute: { probes.keys.allSatisfy { heard.value.bytes.contains($0) } }) {
            usleep(50_000)
        }
        var results = interfaces.map { ResultIPv6(interface: $0) }
        queue.sync {
            for (bytes, (index, isControl)) in probes where heard.value.bytes.contains(bytes) {
                if isControl { results[index].controlHeard = true } else { results[index].heard = true }
            }
        }
        return results
    }

    /// A probe: beacon-sized random bytes, which open under no network key.
    static func probeBytes() -> [UInt8] { secureRandomBytes(96) }

    /// The probes heard so far, touched on the probe's queue only.
    final class HeardProbes {
        var bytes = Set<[UInt8]>()
    }
}
