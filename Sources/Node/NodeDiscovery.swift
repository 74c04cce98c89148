import Crypto
import Dispatch
import Sync
import Transport
import Wire
#if canImport(Glibc)
import Glibc
#endif

/// Discovery: sealed beacons to the multicast group and to each interface's broadcast address,
/// heard on a port that every node of the host shares (SO_REUSEPORT); and, where the node
/// accepts sessions over IPv6, to the IPv6 link-local group on every link-local interface.
extension Node {
    /// Starts beacons on IPv4 and, where present, IPv6. Either family alone is enough: a LAN
    /// may carry only one of them. Throws when neither can join its group on any interface.
    func startDiscovery() throws {
        dispatchPrecondition(condition: .onQueue(queue))
        let ipv4 = try startDiscoveryIPv4()
        let ipv6 = startDiscoveryIPv6()
        guard ipv4 || ipv6 else {
            discoverySocket?.close()
            discoverySocket = nil
            throw DiscoveryError.noInterface(config.discoveryInterfaces)
        }
        sendBeacon()
        timers.append(RepeatingTimer(interval: config.beaconInterval, queue: queue) { [self] in sendBeacon() })
    }

    /// Binds the IPv4 discovery socket and joins the group; whether any interface joined. The
    /// socket stays even when none did (IPv6 may carry discovery), hearing broadcast beacons.
    private func startDiscoveryIPv4() throws -> Bool {
        let any = try SocketAddress(host: "0.0.0.0", port: config.discoveryPort)
        let socket = try UDPSocket(bind: any, queue: queue, reuseAddress: true, reusePort: true, broadcast: true)
        discoverySocket = socket
        let group = try SocketAddress(host: config.multicastGroup, port: config.discoveryPort)
        var joined = 0
        for interface in discoveryInterfaces() {
            if (try? socket.joinMulticast(group: group, interfaceAddress: interface.address)) != nil { joined += 1 }
        }
        socket.start { [self] bytes, from in receiveBeacon(bytes, from: from) }
        return joined > 0
    }

    /// Binds `[::]` at the discovery port (IPV6_V6ONLY, so IPv4 beacons are not heard twice) and
    /// joins the IPv6 group on every link-local interface; whether any joined. No IPv6, no
    /// link-local interface, a failed bind, or a node that cannot be dialled over IPv6: no
    /// socket, and discovery is IPv4 only, silently.
    private func startDiscoveryIPv6() -> Bool {
        guard acceptsIPv6 else { return false }
        let interfaces = discoveryInterfacesIPv6()
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
        discoverySocketIPv6 = socket
        socket.start { [self] bytes, from in receiveBeacon(bytes, from: from) }
        return true
    }

    /// Announces this node on every IPv4 interface, to the multicast group and the broadcast
    /// address, and on every IPv6 link-local interface, to the IPv6 group.
    func sendBeacon() {
        dispatchPrecondition(condition: .onQueue(queue))
        let beacon = Beacon(author: identity.publicKey, instance: instance, port: listenAddress.port,
                            recordCount: UInt64(recordSet.count), fingerprint: recordSet.fingerprint)
        let datagram = Datagram.beacon(beacon).seal(key: datagramKey)
        if let socket = discoverySocket,
           let group = try? SocketAddress(host: config.multicastGroup, port: config.discoveryPort) {
            for interface in discoveryInterfaces() {
                if (try? socket.setMulticastInterface(interface.address)) != nil { try? socket.send(datagram, to: group) }
                if let broadcast = interface.broadcast, let target = try? SocketAddress(host: broadcast.host, port: config.discoveryPort) {
                    try? socket.send(datagram, to: target)
                }
            }
        }
        if let socket = discoverySocketIPv6,
           let group = try? SocketAddress(host: config.multicastGroupIPv6, port: config.discoveryPort) {
            for interface in discoveryInterfacesIPv6() {
                if (try? socket.setMulticastInterface(index: interface.index)) != nil { try? socket.send(datagram, to: group) }
            }
        }
    }

    func receiveBeacon(_ bytes: [UInt8], from source: SocketAddress) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard case let .beacon(beacon)? = Datagram.open(bytes, key: datagramKey) else { return }
        if beacon.author == identity.publicKey && beacon.instance == instance { return }
        // `withPort` keeps an IPv6 source's scope (its interface), without which a link-local
        // address cannot be dialled.
        let heard = source.withPort(beacon.port)
        // Beacons all leave from the shared discovery port: a ban is of the author, or of the
        // session address it announces, never of the source host.
        if isBanned(beacon.author) {
            bans.note(heard, of: beacon.author)  // its pushed datagrams come from there
            return
        }
        guard !isBanned(heard) else { return }
        let now = monotonicSeconds()
        lastHeard[beacon.author] = wallMillis()
        let known = discovered[beacon.author]
        let address = DiscoveredPeer.address(known: known, heard: heard, instance: beacon.instance, now: now,
                                             freshFor: 3 * config.beaconInterval.seconds)
        let addressSeen = address == heard ? now : known?.addressSeen ?? now
        discovered[beacon.author] = DiscoveredPeer(author: beacon.author, instance: beacon.instance, address: address,
                                                   lastSeen: now, recordCount: beacon.recordCount, fingerprint: beacon.fingerprint,
                                                   addressSeen: addressSeen)
        if known == nil || known?.instance != beacon.instance {
            log("discovered \(describe(beacon.author)) at \(address) (\(beacon.recordCount) records)")
            sendBeacon()  // answer at once, so the newcomer learns of us without waiting
            // A session left from before the peer was lost (a partition, a restart) may be
            // dead while TCP still retries: if it has been silent, start afresh.
            let stale = config.beaconInterval.seconds * 3
            for slot in sessions.values where slot.peer == beacon.author && now - slot.lastActivity > stale {
                close(slot, reason: "silent since the peer was lost", misbehaved: false)
            }
        }
        let inSync = beacon.recordCount == UInt64(recordSet.count) && beacon.fingerprint == recordSet.fingerprint
        let hasSession = sessions.values.contains { $0.peer == beacon.author || ($0.outbound && $0.connection.remoteAddress == address) }
        // The smaller identity dials, so two nodes never open two sessions to each other at once.
        if !inSync && !hasSession && identity.publicKey < beacon.author {
            connect(to: address, expected: beacon.author, manual: false)
        }
    }

    /// The interfaces beacons use: all IPv4 ones, or those named in the configuration.
    func discoveryInterfaces() -> [Interfaces.IPv4] {
        configured(Interfaces.ipv4(), name: \.name)
    }

    /// The IPv6 link-local interfaces beacons use: all, or those named in the configuration.
    func discoveryInterfacesIPv6() -> [Interfaces.IPv6LinkLocal] {
        configured(Interfaces.ipv6LinkLocal(), name: \.name)
    }

    /// `all`, or those of them named in `config.discoveryInterfaces` when it names any.
    private func configured<Interface>(_ all: [Interface], name: (Interface) -> String) -> [Interface] {
        guard !config.discoveryInterfaces.isEmpty else { return all }
        return all.filter { config.discoveryInterfaces.contains(name($0)) }
    }

    func expirePeers(now: Double) {
        let limit = 3 * config.beaconInterval.seconds
        for (author, peer) in discovered where now - peer.lastSeen > limit {
            discovered.removeValue(forKey: author)
            log("lost \(describe(author)): no beacon for \(Node.secondsText(limit))")
        }
    }
}

/// The host's interfaces that beacons can use, from getifaddrs: IPv4 here, IPv6 link-local in
/// InterfacesIPv6.swift.
enum Interfaces {
    struct IPv4 {
        let name: String
        let address: SocketAddress
        let broadcast: SocketAddress?
    }

    /// Calls `body` with every entry of getifaddrs (the list lives only during the call).
    static func forEachAddress(_ body: (ifaddrs) -> Void) {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0, let first = list else { return }
        defer { freeifaddrs(list) }
        var cursor: UnsafeMutablePointer<ifaddrs>? = first
        while let entry = cursor {
            body(entry.pointee)
            cursor = entry.pointee.ifa_next
        }
    }

    static func ipv4() -> [IPv4] {
        var result = [IPv4]()
        forEachAddress { entry in
            let flags = Int32(entry.ifa_flags)
            // Loopback carries multicast between the nodes of one host even without IFF_MULTICAST.
            guard let addr = entry.ifa_addr, addr.pointee.sa_family == sa_family_t(AF_INET),
                  flags & Int32(IFF_UP) != 0, flags & Int32(IFF_MULTICAST | IFF_LOOPBACK) != 0 else { return }
            guard let address = host(of: addr).flatMap({ try? SocketAddress(host: $0, port: 0) }) else { return }
            var broadcast: SocketAddress?
            if flags & Int32(IFF_BROADCAST) != 0, let b = entry.ifa_ifu.ifu_broadaddr {
                broadcast = host(of: b).flatMap { try? SocketAddress(host: $0, port: 0) }
            }
            result.append(IPv4(name: String(cString: entry.ifa_name), address: address, broadcast: broadcast))
        }
        return result
    }

    private static func host(of addr: UnsafeMutablePointer<sockaddr>) -> String? {
        var buffer = [CChar](repeating: 0, count: Int(INET_ADDRSTRLEN))
        return addr.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { sin in
            var a = sin.pointee.sin_addr
            guard inet_ntop(AF_INET, &a, &buffer, socklen_t(buffer.count)) != nil else { return nil }
            return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
    }
}

extension DispatchTimeInterval {
    var seconds: Double {
        switch self {
        case let .seconds(s): return Double(s)
        case let .milliseconds(ms): return Double(ms) / 1000
        case let .microseconds(us): return Double(us) / 1e6
        case let .nanoseconds(ns): return Double(ns) / 1e9
        default: return .infinity
        }
    }
}

/// Discovery could not start.
enum DiscoveryError: Error, CustomStringConvertible {
    /// No usable interface (or none of the named ones) could join a beacon group, IPv4 or IPv6.
    case noInterface([String])

    var description: String {
        switch self {
        case let .noInterface(names):
            return names.isEmpty ? "no interface can join the discovery group"
                : "none of the interfaces \(names.joined(separator: ", ")) is up with an IPv4 or IPv6 link-local address"
        }
    }
}
