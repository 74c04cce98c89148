import Transport
#if canImport(Glibc)
import Glibc
#endif

/// The host's IPv6 link-local addresses, for beacons to the IPv6 link-local multicast group.
extension Interfaces {
    /// An interface that is up, can multicast and has an IPv6 link-local address. IPv6 multicast
    /// names the interface by `index`; `address` keeps that index as its scope.
    struct IPv6LinkLocal {
        let name: String
        let index: UInt32
        let address: SocketAddress
    }

    /// One entry per interface (the first link-local address of each), from getifaddrs.
    /// Loopback has no link-local address, so it never appears: IPv4 covers the nodes of one host.
    static func ipv6LinkLocal() -> [IPv6LinkLocal] {
        var result = [IPv6LinkLocal]()
        forEachAddress { entry in
            let flags = Int32(entry.ifa_flags)
            guard let addr = entry.ifa_addr, addr.pointee.sa_family == sa_family_t(AF_INET6),
                  flags & Int32(IFF_UP) != 0, flags & Int32(IFF_MULTICAST) != 0,
                  flags & Int32(IFF_LOOPBACK) == 0 else { return }
            var storage = sockaddr_storage()
            withUnsafeMutableBytes(of: &storage) { bytes in
                bytes.storeBytes(of: addr.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { $0.pointee },
                                 as: sockaddr_in6.self)
            }
            guard let address = try? SocketAddress(storage: storage), address.isLinkLocal else { return }
            let name = String(cString: entry.ifa_name)
            let index = address.scopeID != 0 ? address.scopeID : if_nametoindex(name)
            guard index != 0, !result.contains(where: { $0.index == index }) else { return }
            result.append(IPv6LinkLocal(name: name, index: index, address: address))
        }
        return result
    }
}
