import Crypto

/// Noise's CipherState (§5.1): a ChaCha20-Poly1305 key, possibly absent, and the counter used as
/// its nonce. Without a key, "encryption" is the identity, which is how the first handshake
/// tokens travel before any key exists.
struct NoiseCipherState: Sendable {
    /// 32 bytes, or `nil` before the first `MixKey`.
    private(set) var key: SecretBytes?
    /// The next nonce. Never reused: it only moves forward, and only after a successful operation.
    private(set) var nonce: UInt64 = 0

    /// `nonce` other than 0 only lets tests reach the reserved value without 2^64 operations.
    init(key: SecretBytes? = nil, nonce: UInt64 = 0) {
        self.key = key
        self.nonce = nonce
    }

    var hasKey: Bool { key != nil }

    /// Encrypts with the next nonce. Noise reserves 2^64-1, so reaching it is an error rather
    /// than a wrap-around that would reuse nonces.
    mutating func encrypt(ad: [UInt8], plaintext: [UInt8]) throws(NoiseError) -> [UInt8] {
        guard let key else { return plaintext }
        guard nonce < .max else { throw .nonceExhausted }
        let sealed = ChaChaPoly.seal(key: key, nonce: nonce, ad: ad, plaintext: plaintext)
        nonce += 1
        return sealed
    }

    /// `encrypt` with empty associated data, in place: `buffer` holds the plaintext and then
    /// `tagByteCount` bytes of room, and ends up holding the ciphertext and tag. Transport only
    /// (a key is required).
    mutating func encryptInPlace(_ buffer: UnsafeMutableRawBufferPointer) throws(NoiseError) {
        guard let key else { throw .unusable }
        guard nonce < .max else { throw .nonceExhausted }
        ChaChaPoly.sealInPlace(key: key, nonce: nonce, buffer)
        nonce += 1
    }

    /// `decrypt` with empty associated data, writing the plaintext to `plaintext` (exactly
    /// `ciphertext.count - tagByteCount` bytes). Transport only.
    mutating func decrypt(_ ciphertext: UnsafeRawBufferPointer, into plaintext: UnsafeMutableRawBufferPointer) throws(NoiseError) {
        guard let key else { throw .unusable }
        guard nonce < .max else { throw .nonceExhausted }
        guard ChaChaPoly.open(key: key, nonce: nonce, ciphertext: ciphertext, into: plaintext) else { throw .decryptionFailed }
        nonce += 1
    }

    /// Decrypts with the next nonce; on failure the nonce is unchanged, as Noise specifies.
    mutating func decrypt(ad: [UInt8], ciphertext: [UInt8]) throws(NoiseError) -> [UInt8] {
        guard let key else { return ciphertext }
        guard nonce < .max else { throw .nonceExhausted }
        let opened: [UInt8]
        do {
            opened = try ChaChaPoly.open(key: key, nonce: nonce, ad: ad, ciphertext: ciphertext)
        } catch {
            throw .decryptionFailed
        }
        nonce += 1
        return opened
    }
}
