import Crypto

/// Membership of a lanchat network: 32 secret bytes. Nodes with the same key find each other
/// and sync; anyone without it can neither read their beacons nor complete a session.
/// The default key is derived from a public name, so a LAN works with no set-up; a private
/// network is a random key shared as a file (`lanchat network create`).
public struct NetworkKey: Sendable {
    public let secret: SecretBytes

    /// The name of the network joined when none is given.
    public static let defaultName = "lanchat"

    public init(bytes: [UInt8]) throws(CryptoError) {
        guard bytes.count == 32 else { throw .wrongLength(what: "network key", expected: 32, got: bytes.count) }
        secret = SecretBytes(bytes)
    }

    /// The public network named `name`: BLAKE2b-256("lanchat/network/v1" || 00 || name).
    public static func named(_ name: String) -> NetworkKey {
        try! NetworkKey(bytes: BLAKE2b.hash(Array("lanchat/network/v1".utf8) + [0] + Array(name.utf8)))  // 32 bytes by construction
    }

    /// A fresh random key for a private network.
    public static func random() -> NetworkKey {
        try! NetworkKey(bytes: secureRandomBytes(32))  // 32 bytes by construction
    }

    /// A subkey for one purpose: BLAKE2b-256 keyed by the network key over the purpose's label,
    /// so the datagram key, the handshake PSK and the fingerprint never coincide.
    public func derive(_ label: String) -> SecretBytes {
        secret.withUnsafeBytes { key in SecretBytes(BLAKE2b.hash(Array(label.utf8), length: 32, key: Array(key))) }
    }

    /// Key of sealed datagrams (beacons and pushed records).
    public var datagramKey: SecretBytes { derive("lanchat/datagram/v1") }
    /// The Noise pre-shared key of sessions.
    public var sessionPSK: SecretBytes { derive("lanchat/session-psk/v1") }
    /// A public identifier of the network for logs and status (not secret, not the key).
    public var fingerprint: String { Hex.encode(derive("lanchat/network-id/v1").copyBytes().prefix(6)) }
}
