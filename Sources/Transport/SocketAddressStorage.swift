import Glibc

extension SocketAddress {
    /// Reads an address the kernel filled in (`accept`, `recvfrom`,
    /// `getsockname`). Throws `.unsupported` for families other than
    /// AF_INET/AF_INET6, e.g. a zeroed storage.
    public init(storage: sockaddr_storage) throws(SocketError) {
        var storage = storage
        switch Int32(storage.ss_family) {
        case AF_INET:
            let raw = withUnsafeBytes(of: &storage) { $0.load(as: sockaddr_in.self) }
            self.init(ip: .v4(raw.sin_addr.s_addr), port: UInt16(bigEndian: raw.sin_port))
        case AF_INET6:
            let raw = withUnsafeBytes(of: &storage) { $0.load(as: sockaddr_in6.self) }
            let (high, low) = withUnsafeBytes(of: raw.sin6_addr) {
                ($0.load(fromByteOffset: 0, as: UInt64.self), $0.load(fromByteOffset: 8, as: UInt64.self))
            }
            self.init(
                ip: .v6(high: high, low: low, scopeID: raw.sin6_scope_id),
                port: UInt16(bigEndian: raw.sin6_port))
        default:
            throw .unsupported("address family \(storage.ss_family)")
        }
    }

    /// The address as a `sockaddr_storage`, ready for `bind`/`connect`/`sendto`.
    public var sockaddrStorage: sockaddr_storage {
        var storage = sockaddr_storage()
        withUnsafeMutableBytes(of: &storage) { bytes in
            switch ip {
            case .v4(let bits):
                var raw = sockaddr_in()
                raw.sin_family = sa_family_t(AF_INET)
                raw.sin_port = port.bigEndian
                raw.sin_addr = in_addr(s_addr: bits)
                bytes.storeBytes(of: raw, as: sockaddr_in.self)
            case .v6(_, _, let scopeID):
                var raw = sockaddr_in6()
                raw.sin6_family = sa_family_t(AF_INET6)
                raw.sin6_port = port.bigEndian
                raw.sin6_addr = in6Address
                raw.sin6_scope_id = scopeID
                bytes.storeBytes(of: raw, as: sockaddr_in6.self)
            }
        }
        return storage
    }

    /// The length the kernel expects alongside `sockaddrStorage`: the size of
    /// the family's own struct, not of the whole storage.
    public var sockaddrLength: socklen_t {
        switch ip {
        case .v4: return socklen_t(MemoryLayout<sockaddr_in>.size)
        case .v6: return socklen_t(MemoryLayout<sockaddr_in6>.size)
        }
    }

    /// The protocol family constant for `socket(2)`.
    var protocolFamily: Int32 {
        switch ip {
        case .v4: return AF_INET
        case .v6: return AF_INET6
        }
    }

    /// Calls `body` with a `sockaddr` pointer and length valid only for the
    /// duration of the call, which is all a system call needs.
    func withSockAddr<R>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> R) -> R {
        var storage = sockaddrStorage
        let length = sockaddrLength
        return withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, length) }
        }
    }
}
