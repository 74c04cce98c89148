import Glibc

/// An IPv4 or IPv6 address plus a port, as used by `bind`, `sendto` and
/// `connect`.
///
/// The address bytes are held as plain integers rather than as C `sockaddr`
/// structs, so the value is cheap to copy, hash and compare, and can cross
/// threads (`Sendable`). Conversion to and from `sockaddr_storage` happens only
/// at the system-call boundary.
public struct SocketAddress: Hashable, Sendable {
    /// Which IP version an address belongs to.
    public enum Family: Hashable, Sendable {
        case ipv4
        case ipv6
    }

    /// Address bytes exactly as they sit in `in_addr` / `in6_addr` (network
    /// byte order), so round trips through the kernel are bit-exact.
    enum IP: Hashable, Sendable {
        case v4(UInt32)
        case v6(high: UInt64, low: UInt64, scopeID: UInt32)
    }

    let ip: IP

    /// The port in host byte order.
    public let port: UInt16

    init(ip: IP, port: UInt16) {
        self.ip = ip
        self.port = port
    }

    /// IPv4 or IPv6.
    public var family: Family {
        switch ip {
        case .v4: return .ipv4
        case .v6: return .ipv6
        }
    }

    /// The numeric host, e.g. `"127.0.0.1"` or `"::1"` (no brackets, no port).
    public var host: String {
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        switch ip {
        case .v4(let bits):
            var raw = in_addr(s_addr: bits)
            _ = inet_ntop(AF_INET, &raw, &text, socklen_t(text.count))
        case .v6:
            var raw = in6Address
            _ = inet_ntop(AF_INET6, &raw, &text, socklen_t(text.count))
        }
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Whether this is an IPv4 multicast (224.0.0.0/4) or IPv6 multicast
    /// (ff00::/8) address.
    public var isMulticast: Bool {
        switch ip {
        case .v4(let bits):
            return UInt32(bigEndian: bits) >> 28 == 0xE
        case .v6:
            return withUnsafeBytes(of: in6Address) { $0[0] == 0xFF }
        }
    }

    /// Whether this is an IPv6 link-local unicast address (fe80::/10), which
    /// is only meaningful together with its scope (the interface index).
    public var isLinkLocal: Bool {
        guard case .v6 = ip else { return false }
        return withUnsafeBytes(of: in6Address) { $0[0] == 0xFE && $0[1] & 0xC0 == 0x80 }
    }

    /// Whether this is the wildcard address (0.0.0.0 or ::), which binds
    /// every local address of its family.
    public var isUnspecified: Bool {
        switch ip {
        case .v4(let bits): return bits == 0
        case .v6(let high, let low, _): return high == 0 && low == 0
        }
    }

    /// The IPv6 scope (interface index) of a link-local address; 0 when
    /// unscoped, and always 0 for IPv4.
    public var scopeID: UInt32 {
        guard case .v6(_, _, let scopeID) = ip else { return 0 }
        return scopeID
    }

    /// A copy with another port, e.g. to send to a group on a bound port.
    public func withPort(_ port: UInt16) -> SocketAddress {
        SocketAddress(ip: ip, port: port)
    }

    var in6Address: in6_addr {
        guard case .v6(let high, let low, _) = ip else { return in6_addr() }
        var raw = in6_addr()
        withUnsafeMutableBytes(of: &raw) { bytes in
            bytes.storeBytes(of: high, toByteOffset: 0, as: UInt64.self)
            bytes.storeBytes(of: low, toByteOffset: 8, as: UInt64.self)
        }
        return raw
    }
}

extension SocketAddress: CustomStringConvertible {
    /// `"1.2.3.4:5"` for IPv4 and `"[::1]:5"` for IPv6 (`"[fe80::1%2]:5"` when
    /// a link-local scope is set): the forms `parse(_:)` accepts back.
    public var description: String {
        switch ip {
        case .v4:
            return "\(host):\(port)"
        case .v6(_, _, let scopeID):
            let scope = scopeID == 0 ? "" : "%\(scopeID)"
            return "[\(host)\(scope)]:\(port)"
        }
    }
}
