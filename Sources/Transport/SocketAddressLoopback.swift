extension SocketAddress {
    /// Whether the address is on the loopback network (127.0.0.0/8 or ::1), reachable only
    /// from this machine: the local API binds such addresses unless told otherwise.
    public var isLoopback: Bool {
        switch family {
        case .ipv4: return host.hasPrefix("127.")
        case .ipv6: return host == "::1"
        }
    }
}
