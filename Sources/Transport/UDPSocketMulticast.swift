import Glibc

extension UDPSocket {
    /// Joins an IPv4 multicast group (for IPv6 see `joinMulticast(group:interfaceIndex:)`) so datagrams sent to it are delivered to
    /// this socket. Call on `queue`.
    ///
    /// Also turns multicast loopback on (other nodes on this host must hear
    /// us) and sets the TTL to 1 (chat discovery must never leave the LAN).
    ///
    /// - Parameter interfaceAddress: the local address of the interface to
    ///   join on; `nil` lets the kernel pick by routing table. Tests pass
    ///   127.0.0.1 to stay on loopback.
    public func joinMulticast(group: SocketAddress, interfaceAddress: SocketAddress? = nil) throws(SocketError) {
        let fd = try openDescriptor()
        guard group.isMulticast else { throw .invalidAddress("\(group.host) is not a multicast group") }
        let request = try Self.membership(group, interfaceAddress: interfaceAddress)
        try SocketCalls.setOption(fd, level: Int32(IPPROTO_IP), name: IP_ADD_MEMBERSHIP, value: request,
                                  call: "setsockopt(IP_ADD_MEMBERSHIP)")
        try SocketCalls.setOption(fd, level: Int32(IPPROTO_IP), name: IP_MULTICAST_LOOP, value: Int32(1),
                                  call: "setsockopt(IP_MULTICAST_LOOP)")
        try SocketCalls.setOption(fd, level: Int32(IPPROTO_IP), name: IP_MULTICAST_TTL, value: Int32(1),
                                  call: "setsockopt(IP_MULTICAST_TTL)")
    }

    /// Leaves a group joined with `joinMulticast`. Call on `queue`.
    public func leaveMulticast(group: SocketAddress, interfaceAddress: SocketAddress? = nil) throws(SocketError) {
        let fd = try openDescriptor()
        let request = try Self.membership(group, interfaceAddress: interfaceAddress)
        try SocketCalls.setOption(fd, level: Int32(IPPROTO_IP), name: IP_DROP_MEMBERSHIP, value: request,
                                  call: "setsockopt(IP_DROP_MEMBERSHIP)")
    }

    /// Chooses the interface (by its local IPv4 address) that outgoing
    /// multicast leaves through. Without it the kernel follows the default
    /// route, which on a multi-homed host may be the wrong LAN. Call on `queue`.
    public func setMulticastInterface(_ address: SocketAddress) throws(SocketError) {
        let fd = try openDescriptor()
        let interface = try Self.ipv4(address, role: "multicast interface")
        try SocketCalls.setOption(fd, level: Int32(IPPROTO_IP), name: IP_MULTICAST_IF, value: interface,
                                  call: "setsockopt(IP_MULTICAST_IF)")
    }

    /// The request naming `group` on the interface with `interfaceAddress` (any when nil).
    private static func membership(_ group: SocketAddress, interfaceAddress: SocketAddress?) throws(SocketError) -> ip_mreq {
        var request = ip_mreq()
        request.imr_multiaddr = try ipv4(group, role: "multicast group")
        request.imr_interface = try interfaceAddress.map { address throws(SocketError) in
            try ipv4(address, role: "multicast interface")
        } ?? in_addr(s_addr: INADDR_ANY)
        return request
    }

    private static func ipv4(_ address: SocketAddress, role: String) throws(SocketError) -> in_addr {
        guard case .v4(let bits) = address.ip else {
            throw .unsupported("IPv6 \(role) by address (IPv6 multicast takes an interface index)")
        }
        return in_addr(s_addr: bits)
    }
}
