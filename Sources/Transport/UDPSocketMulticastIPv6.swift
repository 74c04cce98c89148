import Glibc

/// IPv6 multicast. Unlike IPv4, where an interface is named by one of its
/// addresses, IPv6 names interfaces by index: a link-local address (fe80::)
/// exists on every link, so only the index says which link is meant.
extension UDPSocket {
    /// Joins an IPv6 multicast group on the interface with this index, so
    /// datagrams sent to it on that link are delivered to this socket. Call on
    /// `queue`.
    ///
    /// Also turns multicast loopback on (other nodes on this host must hear
    /// us) and sets the hop limit to 1 (discovery must never leave the link,
    /// whatever the group's scope).
    public func joinMulticast(group: SocketAddress, interfaceIndex: UInt32) throws(SocketError) {
        let fd = try openDescriptor()
        let request = try Self.membership(group, interfaceIndex: interfaceIndex)
        try SocketCalls.setOption(fd, level: Int32(IPPROTO_IPV6), name: IPV6_JOIN_GROUP, membership: request,
                                  call: "setsockopt(IPV6_JOIN_GROUP)")
        try SocketCalls.setOption(fd, level: Int32(IPPROTO_IPV6), name: IPV6_MULTICAST_LOOP, value: Int32(1),
                                  call: "setsockopt(IPV6_MULTICAST_LOOP)")
        try SocketCalls.setOption(fd, level: Int32(IPPROTO_IPV6), name: IPV6_MULTICAST_HOPS, value: Int32(1),
                                  call: "setsockopt(IPV6_MULTICAST_HOPS)")
    }

    /// Leaves a group joined with `joinMulticast(group:interfaceIndex:)`. Call on `queue`.
    public func leaveMulticast(group: SocketAddress, interfaceIndex: UInt32) throws(SocketError) {
        let fd = try openDescriptor()
        let request = try Self.membership(group, interfaceIndex: interfaceIndex)
        try SocketCalls.setOption(fd, level: Int32(IPPROTO_IPV6), name: IPV6_LEAVE_GROUP, membership: request,
                                  call: "setsockopt(IPV6_LEAVE_GROUP)")
    }

    /// Chooses the interface (by index) that outgoing IPv6 multicast leaves
    /// through: a link-scoped group (ff02::) means nothing without one, and
    /// the kernel's own choice would be a single, arbitrary link. Call on `queue`.
    public func setMulticastInterface(index: UInt32) throws(SocketError) {
        let fd = try openDescriptor()
        try SocketCalls.setOption(fd, level: Int32(IPPROTO_IPV6), name: IPV6_MULTICAST_IF, value: Int32(bitPattern: index),
                                  call: "setsockopt(IPV6_MULTICAST_IF)")
    }

    private static func membership(_ group: SocketAddress, interfaceIndex: UInt32) throws(SocketError) -> ipv6_mreq {
        guard group.family == .ipv6 else {
            throw .unsupported("IPv4 multicast group \(group.host) by interface index (IPv4 takes an interface address)")
        }
        guard group.isMulticast else { throw .invalidAddress("\(group.host) is not a multicast group") }
        var request = ipv6_mreq()
        request.ipv6mr_multiaddr = group.in6Address
        request.ipv6mr_interface = interfaceIndex
        return request
    }
}
