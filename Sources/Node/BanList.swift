import Crypto
import Transport

/// Who is ignored after breaking the protocol, and until when (monotonic seconds); Protocol.md §9.
///
/// Never a host alone: several nodes share a host (SO_REUSEPORT), and one of them breaking the
/// protocol says nothing of the others. A peer whose handshake and hello proved its identity is
/// banned by that identity, wherever it connects from; one that failed before that is banned by
/// the remote TCP endpoint, address and port.
struct BanList {
    /// A banned identity, and the session addresses (host and announced or dialled port) it was
    /// known or heard at since: its pushed datagrams leave from there, and manual peers are
    /// dialled there, before any handshake could say who answers.
    private struct IdentityBan {
        var until: Double
        var addresses: Set<SocketAddress>
    }

    private var identities: [PublicKey: IdentityBan] = [:]
    private var endpoints: [SocketAddress: Double] = [:]

    /// Bans `peer` until `until`, also at `addresses`, where it was known to listen.
    mutating func ban(_ peer: PublicKey, at addresses: Set<SocketAddress>, until: Double) {
        identities[peer] = IdentityBan(until: until, addresses: addresses)
    }

    /// At most this many endpoint bans are kept: a flood of failed handshakes from ever new
    /// source ports must not grow memory without bound. Past it, expired bans go first, then
    /// the one that ends soonest (an accepted connection's ban covers only that connection).
    static let maxEndpoints = 4096

    /// Bans one remote endpoint until `until`.
    mutating func ban(_ endpoint: SocketAddress, until: Double, now: Double) {
        if endpoints.count >= Self.maxEndpoints {
            prune(now: now)
            if endpoints.count >= Self.maxEndpoints, let soonest = endpoints.min(by: { $0.value < $1.value })?.key {
                endpoints.removeValue(forKey: soonest)
            }
        }
        endpoints[endpoint] = until
    }

    /// Number of endpoint bans held (for tests).
    var endpointCount: Int { endpoints.count }

    /// Whether `peer` is banned at `now`.
    func contains(_ peer: PublicKey, now: Double) -> Bool {
        (identities[peer]?.until ?? 0) > now
    }

    /// Whether `endpoint` is banned at `now`: by itself, or as an address of a banned identity.
    func contains(_ endpoint: SocketAddress, now: Double) -> Bool {
        if (endpoints[endpoint] ?? 0) > now { return true }
        return identities.values.contains { $0.until > now && $0.addresses.contains(endpoint) }
    }

    /// Notes that banned `peer` was heard at `address` (a beacon), so that address is banned too.
    mutating func note(_ address: SocketAddress, of peer: PublicKey) {
        identities[peer]?.addresses.insert(address)
    }

    /// Forgets the bans that ended by `now`.
    mutating func prune(now: Double) {
        identities = identities.filter { $0.value.until > now }
        endpoints = endpoints.filter { $0.value > now }
    }
}
