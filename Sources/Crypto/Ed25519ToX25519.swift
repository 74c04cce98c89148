internal import CSodium

/// A node has one identity key (Ed25519, for signing records); Noise needs a Diffie-Hellman key.
/// Deriving the X25519 form (libsodium's birational map) avoids a second key to store and
/// authenticate: the Noise static key is provably the identity's.
extension PrivateKey {
    /// The X25519 private key for this identity: the clamped first half of SHA-512(seed), as
    /// `crypto_sign_ed25519_sk_to_curve25519` computes it.
    public func x25519() -> X25519PrivateKey {
        Sodium.ready()
        // libsodium's 64-byte secret key is seed || public key; rebuild it from the public parts
        // of `PrivateKey` so Ed25519.swift need not expose its storage.
        var sk = seed().copyBytes() + publicKey.bytes
        var curve = [UInt8](repeating: 0, count: X25519PrivateKey.byteCount)
        defer {
            sodium_memzero(&sk, sk.count)
            sodium_memzero(&curve, curve.count)
        }
        _ = crypto_sign_ed25519_sk_to_curve25519(&curve, sk)  // cannot fail: it only hashes and clamps
        return try! X25519PrivateKey(bytes: curve)  // 32 bytes by construction
    }
}

extension PublicKey {
    /// The X25519 public key for this identity. Throws for encodings that are not a valid,
    /// non-small-order Edwards point, which a genuine identity never is.
    public func x25519() throws(CryptoError) -> X25519PublicKey {
        Sodium.ready()
        var curve = [UInt8](repeating: 0, count: X25519PublicKey.byteCount)
        guard crypto_sign_ed25519_pk_to_curve25519(&curve, bytes) == 0 else {
            throw .operationFailed("Ed25519 public key has no X25519 form")
        }
        return try X25519PublicKey(bytes: curve)
    }
}
