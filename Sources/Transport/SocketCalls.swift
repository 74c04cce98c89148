import Glibc

/// Thin typed wrappers over the socket calls shared by the UDP and TCP types.
enum SocketCalls {
    /// A new socket that is non-blocking and close-on-exec from birth, so no
    /// window exists in which it could block a queue or leak into a child.
    static func open(family: Int32, type: __socket_type) throws(SocketError) -> Int32 {
        let flags = Int32(type.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        return try syscall("socket") { socket(family, flags, 0) }
    }

    /// `setsockopt` with the value passed by address and its size taken from
    /// its type, which is how every option used here is shaped.
    static func setOption<Value: BitwiseCopyable>(
        _ fd: Int32, level: Int32, name: Int32, value: Value, call: String
    ) throws(SocketError) {
        var value = value
        let size = socklen_t(MemoryLayout<Value>.size)
        _ = try syscall(call) { setsockopt(fd, level, name, &value, size) }
    }

    /// `setsockopt` with an `ipv6_mreq`, which Swift does not see as BitwiseCopyable (its
    /// `in6_addr` holds a C union) although it is plain bytes like every other option value.
    static func setOption(_ fd: Int32, level: Int32, name: Int32, membership: ipv6_mreq, call: String) throws(SocketError) {
        _ = try syscall(call) {
            withUnsafeBytes(of: membership) { setsockopt(fd, level, name, $0.baseAddress, socklen_t($0.count)) }
        }
    }

    /// Reads an integer-valued option such as SO_ERROR.
    static func intOption(_ fd: Int32, level: Int32, name: Int32, call: String) throws(SocketError) -> Int32 {
        var value: Int32 = 0
        var size = socklen_t(MemoryLayout<Int32>.size)
        _ = try syscall(call) { getsockopt(fd, level, name, &value, &size) }
        return value
    }

    /// Sets O_NONBLOCK and FD_CLOEXEC on a descriptor that did not get them
    /// at birth. Glibc's `accept4` (which could) is not visible to Swift, so
    /// accepted sockets take this path; the short window before FD_CLOEXEC is
    /// harmless because this process does not fork.
    static func makeNonBlockingAndCloseOnExec(_ fd: Int32) throws(SocketError) {
        let statusFlags = try syscall("fcntl(F_GETFL)") { fcntl(fd, F_GETFL) }
        _ = try syscall("fcntl(F_SETFL)") { fcntl(fd, F_SETFL, statusFlags | O_NONBLOCK) }
        let descriptorFlags = try syscall("fcntl(F_GETFD)") { fcntl(fd, F_GETFD) }
        _ = try syscall("fcntl(F_SETFD)") { fcntl(fd, F_SETFD, descriptorFlags | FD_CLOEXEC) }
    }

    static func bind(_ fd: Int32, to address: SocketAddress) throws(SocketError) {
        _ = try syscall("bind") { address.withSockAddr { Glibc.bind(fd, $0, $1) } }
    }

    /// The address the kernel actually bound, which differs from the request
    /// when port 0 asked it to choose.
    static func localAddress(_ fd: Int32) throws(SocketError) -> SocketAddress {
        try fetchAddress("getsockname") { getsockname(fd, $0, $1) }
    }

    static func remoteAddress(_ fd: Int32) throws(SocketError) -> SocketAddress {
        try fetchAddress("getpeername") { getpeername(fd, $0, $1) }
    }

    /// Runs a call that fills a `sockaddr` (getsockname, accept, recvfrom
    /// style) and decodes the result.
    static func fetchAddress(
        _ call: String,
        _ body: (UnsafeMutablePointer<sockaddr>, UnsafeMutablePointer<socklen_t>) -> Int32
    ) throws(SocketError) -> SocketAddress {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = try syscall(call) {
            withUnsafeMutablePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, &length) }
            }
        }
        return try SocketAddress(storage: storage)
    }

    /// IPV6_V6ONLY: an IPv6 socket that neither accepts nor sends IPv4-mapped
    /// traffic. Linux's default (net.ipv6.bindv6only=0) is dual-stack, under
    /// which `[::]:port` would also take `0.0.0.0:port`. Set before `bind`.
    static func setV6Only(_ fd: Int32) throws(SocketError) {
        try setOption(fd, level: Int32(IPPROTO_IPV6), name: IPV6_V6ONLY, value: Int32(1),
                      call: "setsockopt(IPV6_V6ONLY)")
    }

    /// Disables Nagle's algorithm. Chat records are small and latency matters
    /// more than packet count; callers batch their own writes.
    static func setNoDelay(_ fd: Int32) throws(SocketError) {
        try setOption(fd, level: Int32(IPPROTO_TCP), name: TCP_NODELAY, value: Int32(1),
                      call: "setsockopt(TCP_NODELAY)")
    }
}
