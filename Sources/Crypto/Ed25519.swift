internal import CSodium

/// An Ed25519 public key: a user's identity. 32 bytes, checked at construction.
public struct PublicKey: Hashable, Sendable, Comparable {
    public static let byteCount = 32
    /// The raw 32 bytes, as they appear in records.
    public let bytes: [UInt8]

    public init(bytes: some Collection<UInt8>) throws(CryptoError) {
        guard bytes.count == Self.byteCount else {
            throw .wrongLength(what: "Ed25519 public key", expected: Self.byteCount, got: bytes.count)
        }
        self.bytes = Array(bytes)
    }

    /// Checks an Ed25519 signature over `message` (libsodium rejects small-order and
    /// non-canonical encodings). Returns `false` for any invalid signature.
    public func verify(_ signature: Signature, for message: some Collection<UInt8>) -> Bool {
        // In place where the bytes lie together (a record's signed part is a slice of it).
        if let valid = message.withContiguousStorageIfAvailable({ verify(signature, for: $0) }) { return valid }
        return Array(message).withUnsafeBufferPointer { verify(signature, for: $0) }
    }

    private func verify(_ signature: Signature, for message: UnsafeBufferPointer<UInt8>) -> Bool {
        Sodium.ready()
        return signature.bytes.withUnsafeBufferPointer { sig in
            bytes.withUnsafeBufferPointer { pk in
                crypto_sign_verify_detached(sig.baseAddress!, message.baseAddress, UInt64(message.count), pk.baseAddress!) == 0
            }
        }
    }

    /// The user id: the key in unpadded base64url (43 characters, a valid Firebase key).
    public var userID: String { Base64URL.encode(bytes) }

    /// Parses a user id back into a key.
    public init(userID: String) throws(CryptoError) {
        guard let raw = Base64URL.decode(userID) else {
            throw .operationFailed("\"\(userID)\" is not a base64url user id")
        }
        try self.init(bytes: raw)
    }

    public static func < (a: PublicKey, b: PublicKey) -> Bool { a.bytes.lexicographicallyPrecedes(b.bytes) }

    /// The 32 bytes in one call, as `Digest32` does: an array's own hashing feeds the hasher
    /// byte by byte, and a member's node looks its authors up in member sets for every sealed
    /// write it folds (equal keys have equal bytes, so this agrees with `==`).
    public func hash(into hasher: inout Hasher) {
        bytes.withUnsafeBytes { hasher.combine(bytes: $0) }
    }
}

/// An Ed25519 signature: 64 bytes, checked at construction.
public struct Signature: Hashable, Sendable {
    public static let byteCount = 64
    public let bytes: [UInt8]

    public init(bytes: some Collection<UInt8>) throws(CryptoError) {
        guard bytes.count == Self.byteCount else {
            throw .wrongLength(what: "Ed25519 signature", expected: Self.byteCount, got: bytes.count)
        }
        self.bytes = Array(bytes)
    }
}

/// An Ed25519 private key. Only the 32-byte seed is kept on disk; the expanded 64-byte secret
/// lives in `SecretBytes`, wiped when the key is released.
public final class PrivateKey: Sendable {
    public static let seedByteCount = 32
    private let secret: SecretBytes  // libsodium's 64-byte form: seed || public key
    public let publicKey: PublicKey

    /// A fresh key from libsodium's secure generator.
    public convenience init() {
        let seed = SecretBytes(secureRandomBytes(Self.seedByteCount))
        try! self.init(seed: seed)  // the seed has the right length by construction
    }

    /// The key determined by a 32-byte seed (RFC 8032's private key).
    public init(seed: SecretBytes) throws(CryptoError) {
        guard seed.count == Self.seedByteCount else {
            throw .wrongLength(what: "Ed25519 seed", expected: Self.seedByteCount, got: seed.count)
        }
        Sodium.ready()
        var pk = [UInt8](repeating: 0, count: 32)
        var sk = [UInt8](repeating: 0, count: 64)
        let rc = seed.withUnsafeBytes { s in
            crypto_sign_seed_keypair(&pk, &sk, s.bindMemory(to: UInt8.self).baseAddress!)
        }
        defer { sodium_memzero(&sk, sk.count) }
        guard rc == 0 else { throw .operationFailed("crypto_sign_seed_keypair") }
        secret = SecretBytes(sk)
        publicKey = try PublicKey(bytes: pk)
    }

    /// Convenience for tests and vectors: a seed given as plain bytes.
    public convenience init(seedBytes: [UInt8]) throws(CryptoError) {
        try self.init(seed: SecretBytes(seedBytes))
    }

    /// The 32-byte seed, for writing the key file.
    public func seed() -> SecretBytes {
        secret.withUnsafeBytes { SecretBytes($0[0..<Self.seedByteCount]) }
    }

    /// Signs `message` (Ed25519 is deterministic: the same message gives the same signature).
    public func sign(_ message: some Collection<UInt8>) throws(CryptoError) -> Signature {
        Sodium.ready()
        let message = Array(message)
        var sig = [UInt8](repeating: 0, count: Signature.byteCount)
        let rc = secret.withUnsafeBytes { sk in
            message.withUnsafeBufferPointer { msg in
                crypto_sign_detached(&sig, nil, msg.baseAddress, UInt64(msg.count), sk.bindMemory(to: UInt8.self).baseAddress!)
            }
        }
        guard rc == 0 else { throw .operationFailed("crypto_sign_detached") }
        return try Signature(bytes: sig)
    }
}
