internal import CSodium

/// An X25519 public key (RFC 7748): the Diffie-Hellman half of a node's identity, used as the
/// Noise static key and for ephemeral keys. 32 bytes, checked at construction.
public struct X25519PublicKey: Hashable, Sendable, CustomStringConvertible {
    public static let byteCount = 32
    /// The raw little-endian u-coordinate, as it travels in Noise messages.
    public let bytes: [UInt8]

    public init(bytes: some Collection<UInt8>) throws(CryptoError) {
        guard bytes.count == Self.byteCount else {
            throw .wrongLength(what: "X25519 public key", expected: Self.byteCount, got: bytes.count)
        }
        self.bytes = Array(bytes)
    }

    public var description: String { Hex.encode(bytes) }
}

/// An X25519 private key. The 32-byte scalar lives in `SecretBytes` so it is wiped when the key
/// is released; a class, like `PrivateKey`, so the secret is never silently copied.
public final class X25519PrivateKey: Sendable {
    public static let byteCount = 32
    private let secret: SecretBytes
    public let publicKey: X25519PublicKey

    /// A fresh key from libsodium's secure generator (Noise ephemerals, tests).
    public convenience init() {
        var raw = secureRandomBytes(Self.byteCount)
        defer { sodium_memzero(&raw, raw.count) }
        try! self.init(secret: SecretBytes(raw))  // the length is right by construction
    }

    /// The key with the given 32-byte scalar. Clamping happens inside every scalar multiplication
    /// (RFC 7748 §5), so any 32 bytes are a valid key and are kept exactly as given.
    public init(secret: SecretBytes) throws(CryptoError) {
        guard secret.count == Self.byteCount else {
            throw .wrongLength(what: "X25519 private key", expected: Self.byteCount, got: secret.count)
        }
        Sodium.ready()
        var pk = [UInt8](repeating: 0, count: Self.byteCount)
        let rc = secret.withUnsafeBytes { crypto_scalarmult_curve25519_base(&pk, $0.bindMemory(to: UInt8.self).baseAddress!) }
        guard rc == 0 else { throw .operationFailed("crypto_scalarmult_curve25519_base") }
        self.secret = secret
        publicKey = try X25519PublicKey(bytes: pk)
    }

    /// Convenience for tests, vectors and the interop tool: the scalar given as plain bytes.
    public convenience init(bytes: [UInt8]) throws(CryptoError) {
        try self.init(secret: SecretBytes(bytes))
    }

    /// The raw scalar, for the few callers that must hand it on (e.g. to persist it).
    public func secretBytes() -> SecretBytes {
        secret.withUnsafeBytes { SecretBytes($0) }
    }

    /// X25519(self, peer). Fails when the result is all zeros, which happens exactly when the
    /// peer sent a low-order point: accepting it would let an attacker force a known "shared"
    /// secret, so Noise implementations may (and this one does) refuse it.
    public func sharedSecret(with peer: X25519PublicKey) throws(CryptoError) -> SecretBytes {
        Sodium.ready()
        var out = [UInt8](repeating: 0, count: 32)
        defer { sodium_memzero(&out, out.count) }
        let rc = secret.withUnsafeBytes { sk in
            peer.bytes.withUnsafeBufferPointer { pk in
                crypto_scalarmult_curve25519(&out, sk.bindMemory(to: UInt8.self).baseAddress!, pk.baseAddress!)
            }
        }
        // libsodium returns -1 precisely for an all-zero output.
        guard rc == 0 else { throw .operationFailed("X25519 produced an all-zero shared secret") }
        return SecretBytes(out)
    }
}
