import Crypto
import Dispatch
import Sync
import Transport
import Wire
#if canImport(Glibc)
import Glibc
#endif

/// Discovery: sealed beacons to every node of the LAN (`LANBeacons` on a real network), sent
/// at start, on hearing a new node and every beacon interval.
extension Node {
    /// Starts beacons; they also go over IPv6 where peers can dial this node there.
    func startDiscovery() throws {
        dispatchPrecondition(condition: .onQueue(queue))
        let channel = try world.network.openBeacons(config, ipv6: acceptsIPv6, queue: queue)
        beacons = channel
        channel.start { [self] bytes, from in receiveBeacon(bytes, from: from) }
        // The first beacon announces the record set, which may still be loading: then it goes
        // out once loaded, rather than holding the queue (and the local API) until it is.
        if loadedRecordSet != nil { sendBeacon() } else { firstBeaconWaiting = true }
        timers.append(world.scheduler.every(config.beaconInterval, on: queue) { [self] in sendBeacon() })
    }

    /// Announces this node to every node that can hear it.
    func sendBeacon() {
        dispatchPrecondition(condition: .onQueue(queue))
        let beacon = Beacon(author: identity.publicKey, instance: instance, port: listenAddress.port,
                            recordCount: UInt64(recordSet.count), fingerprint: recordSet.fingerprint)
        beacons?.announce(Datagram.beacon(beacon).seal(key: datagramKey))
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
        if known == nil { armLivenessTimer() }  // a known peer's deadline only moves later
        if known == nil || known?.instance != beacon.instance {
            peerHeardForLive(beacon.author, instance: beacon.instance)
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
        // A newcomer gets the read receipts held here over a session (Protocol.md §8.2), even
        // when the record sets agree; then either side may dial (a second session is dropped).
        let receiptsToShare = (known == nil || known?.instance != beacon.instance) && !live.receipts.isEmpty
        // The smaller identity dials, so two nodes never open two sessions to each other at once.
        if receiptsToShare && !hasSession && !dialing.contains(beacon.author) {
            connect(to: address, expected: beacon.author, manual: false)
        } else if !inSync && !hasSession && identity.publicKey < beacon.author {
            connect(to: address, expected: beacon.author, manual: false)
        }
    }

    func expirePeers(now: Double) {
        let limit = 3 * config.beaconInterval.seconds
        for (author, peer) in discovered where peer.lastSeen + limit <= now {  // as `armLivenessTimer` computes it
            discovered.removeValue(forKey: author)
            sweepLive()
            notifyLive([presencePath(author.userID)])
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
