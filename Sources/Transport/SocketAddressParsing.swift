import Glibc

extension SocketAddress {
    /// An address from a numeric host and a port.
    ///
    /// Only numeric forms are accepted (`inet_pton`), plus the literal name
    /// `localhost`, which means 127.0.0.1. There is deliberately no DNS: a
    /// lookup could block the calling queue for seconds, and peers on a LAN
    /// are found by discovery, not by name.
    public init(host: String, port: UInt16) throws(SocketError) {
        let numeric = host.lowercased() == "localhost" ? "127.0.0.1" : host
        var v4 = in_addr()
        if inet_pton(AF_INET, numeric, &v4) == 1 {
            self.init(ip: .v4(v4.s_addr), port: port)
            return
        }
        // A link-local IPv6 address needs a zone: "fe80::1%2" or "fe80::1%eth0".
        let parts = numeric.split(separator: "%", maxSplits: 1, omittingEmptySubsequences: false)
        var v6 = in6_addr()
        if inet_pton(AF_INET6, String(parts[0]), &v6) == 1 {
            var scopeID: UInt32 = 0
            if parts.count == 2 {
                let zone = String(parts[1])
                guard let index = UInt32(zone) ?? Self.interfaceIndex(zone) else { throw .invalidAddress(host) }
                scopeID = index
            }
            let (high, low) = withUnsafeBytes(of: v6) {
                ($0.load(fromByteOffset: 0, as: UInt64.self), $0.load(fromByteOffset: 8, as: UInt64.self))
            }
            self.init(ip: .v6(high: high, low: low, scopeID: scopeID), port: port)
            return
        }
        throw .invalidAddress(host)
    }

    /// The index of a local interface by name (a local table lookup, not DNS).
    private static func interfaceIndex(_ name: String) -> UInt32? {
        let index = if_nametoindex(name)
        return index == 0 ? nil : index
    }

    /// Parses `"HOST:PORT"` (IPv4 or `localhost`) or `"[IPv6]:PORT"`.
    ///
    /// An IPv6 host must be bracketed: without brackets, `::1:80` could mean
    /// host `::1` port 80 or host `::1:80` with no port.
    public static func parse(_ text: String) throws(SocketError) -> SocketAddress {
        let host: Substring
        let portText: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { throw .invalidAddress(text) }
            host = text[text.index(after: text.startIndex)..<close]
            let rest = text[text.index(after: close)...]
            guard rest.first == ":" else { throw .invalidAddress(text) }
            portText = rest.dropFirst()
        } else {
            guard let colon = text.lastIndex(of: ":") else { throw .invalidAddress(text) }
            host = text[..<colon]
            portText = text[text.index(after: colon)...]
            if host.contains(":") { throw .invalidAddress(text) }
        }
        guard !host.isEmpty, portText.allSatisfy({ $0.isASCII && $0.isNumber }),
              let port = UInt16(portText)
        else { throw .invalidAddress(text) }
        do {
            return try SocketAddress(host: String(host), port: port)
        } catch {
            throw .invalidAddress(text)
        }
    }
}
