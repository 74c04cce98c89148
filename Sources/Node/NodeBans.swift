import Crypto
import Dispatch
import Transport

/// Bans: a peer that broke the protocol is ignored for `config.banSeconds` (see `BanList` for
/// what exactly is banned, and Protocol.md §9).
extension Node {
    /// Bans the peer of `slot` for breaking the protocol, and logs one line saying who, why and
    /// for how long. A peer whose hello proved its identity is banned by user id; otherwise the
    /// remote endpoint is: for a session this node dialled, the peer's session address; for an
    /// accepted one, the address and the connection's source port: an ephemeral port, so this
    /// refuses only a client that reconnects from that same port, and leaves the host's other
    /// nodes alone (who sent the bytes is unknown, and banning the host would refuse them all).
    /// A peer banned already is not banned again (one bad batch of chunks reports each chunk).
    func ban(_ slot: SessionSlot, reason: String) {
        dispatchPrecondition(condition: .onQueue(queue))
        let now = monotonicSeconds()
        let until = now + config.banSeconds
        if let peer = slot.peer {
            guard !bans.contains(peer, now: now) else { return }
            var addresses = Set<SocketAddress>()
            if slot.outbound { addresses.insert(slot.connection.remoteAddress) }
            if let known = discovered.removeValue(forKey: peer) { addresses.insert(known.address) }
            bans.ban(peer, at: addresses, until: until)
            let name = (try? store.displayName(ofUser: peer.userID)).map { " (\($0))" } ?? ""
            log("banned user \(peer.userID)\(name) for \(banDuration): \(reason)", level: .warning)
            for other in sessions.values where other !== slot && other.peer == peer {
                close(other, reason: "banned", misbehaved: false)
            }
        } else {
            let endpoint = slot.connection.remoteAddress
            guard !bans.contains(endpoint, now: now) else { return }
            bans.ban(endpoint, until: until, now: now)
            log("banned address \(endpoint) for \(banDuration): \(reason)", level: .warning)
        }
    }

    /// Whether `peer` is banned now.
    func isBanned(_ peer: PublicKey) -> Bool {
        bans.contains(peer, now: monotonicSeconds())
    }

    /// Whether `endpoint` is banned now, by itself or as where a banned identity listens.
    func isBanned(_ endpoint: SocketAddress) -> Bool {
        bans.contains(endpoint, now: monotonicSeconds())
    }

    /// `config.banSeconds` for log lines: "60 s", or "0.5 s".
    private var banDuration: String { Node.secondsText(config.banSeconds) }

    /// A duration for log lines: whole seconds as "60 s", others as "0.75 s" (a limit turned
    /// down below a second must not read as "0 s").
    static func secondsText(_ seconds: Double) -> String {
        seconds == seconds.rounded() && seconds < 1e9 ? "\(Int(seconds)) s" : "\(seconds) s"
    }
}
