import Crypto

/// UDP datagrams between nodes (Protocol.md §7): beacons that announce a node, and records
/// pushed to live peers. Every datagram is sealed with the network's datagram key, so
/// non-members learn nothing from them and cannot forge them.
///
///     datagram = type:u8 sealed                      ; sealed = XChaCha20-Poly1305(nonce24 || ct || tag)
///     beacon   = [1, author, instance, port, count, fingerprint]   ; type 1
///     push     = [2, record]                                        ; type 2
///     live     = [3, live]                                          ; type 3 (LiveValue.swift)
public enum Datagram: Equatable, Sendable {
    case beacon(Beacon)
    /// One small record pushed as soon as it exists.
    case push([UInt8])
    /// One signed live value (a typing flag, a status, a read receipt), still to be decoded and verified.
    case live([UInt8])

    /// Largest datagram a node sends or accepts.
    public static let maxBytes = 1200
    /// Additional data bound into every seal.
    static let domain = Array("lanchat/datagram/v1".utf8)

    public func seal(key: SecretBytes) -> [UInt8] {
        seal(key: key, nonce: secureRandomBytes(XChaChaPoly.nonceByteCount))
    }

    /// The plaintext CBOR item and type byte.
    var plaintext: (type: UInt8, item: CBOR) {
        let (type, item): (UInt8, CBOR)
        switch self {
        case let .beacon(b):
            type = 1
            item = .array([.unsigned(1), .bytes(b.author.bytes), .bytes(b.instance), .unsigned(UInt64(b.port)),
                           .unsigned(b.recordCount), .bytes(b.fingerprint)])
        case let .push(record):
            type = 2
            item = .array([.unsigned(2), .bytes(record)])
        case let .live(value):
            type = 3
            item = .array([.unsigned(3), .bytes(value)])
        }
        return (type, item)
    }

    /// Sealing with a given nonce: for test vectors only.
    func seal(key: SecretBytes, nonce: [UInt8]) -> [UInt8] {
        let (type, item) = plaintext
        return [type] + XChaChaPoly.seal(item.encoded(), key: key, ad: Datagram.domain + [type], nonce: nonce)
    }

    /// Opens a datagram from the network; `nil` for anything not sealed under `key` or not
    /// well-formed (such datagrams are dropped without a reply).
    public static func open(_ bytes: [UInt8], key: SecretBytes) -> Datagram? {
        guard bytes.count <= maxBytes, let type = bytes.first, (1...3).contains(type),
              let plain = XChaChaPoly.open(Array(bytes.dropFirst()), key: key, ad: domain + [type]),
              case let .array(fields)? = try? CBORDecoder.decode(plain, limits: CBORLimits(maxDepth: 2, maxItems: 16)),
              case let .unsigned(tag)? = fields.first, tag == UInt64(type)
        else { return nil }
        if type == 2 {
            guard fields.count == 2, case let .bytes(record) = fields[1] else { return nil }
            return .push(record)
        }
        if type == 3 {
            guard fields.count == 2, case let .bytes(value) = fields[1] else { return nil }
            return .live(value)
        }
        guard fields.count == 6, case let .bytes(author) = fields[1], let key = try? PublicKey(bytes: author),
              case let .bytes(instance) = fields[2], instance.count == Beacon.instanceByteCount,
              case let .unsigned(port) = fields[3], port > 0, port <= UInt64(UInt16.max),
              case let .unsigned(count) = fields[4], case let .bytes(fingerprint) = fields[5], fingerprint.count == 16
        else { return nil }
        return .beacon(Beacon(author: key, instance: instance, port: UInt16(port), recordCount: count, fingerprint: fingerprint))
    }
}

/// What a node announces about itself on the LAN every few seconds.
public struct Beacon: Equatable, Sendable {
    public static let instanceByteCount = 8
    /// The node's user (its Ed25519 identity); its session must prove this identity.
    public let author: PublicKey
    /// Random per process start, so peers notice a restart and several nodes per host differ.
    public let instance: [UInt8]
    /// TCP port of the node's session listener.
    public let port: UInt16
    /// How many records the node holds.
    public let recordCount: UInt64
    /// Fingerprint of the node's whole record set (Negentropy's, §8): equal count and fingerprint
    /// mean the sets are equal, so no session is needed.
    public let fingerprint: [UInt8]

    public init(author: PublicKey, instance: [UInt8], port: UInt16, recordCount: UInt64, fingerprint: [UInt8]) {
        self.author = author
        self.instance = instance
        self.port = port
        self.recordCount = recordCount
        self.fingerprint = fingerprint
    }
}
