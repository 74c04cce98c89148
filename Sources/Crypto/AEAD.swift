internal import CSodium

/// ChaCha20-Poly1305 in the IETF form (RFC 8439: 96-bit nonce), the cipher Noise names
/// "ChaChaPoly". Noise addresses messages by a 64-bit counter, so the nonce here is that counter;
/// it is laid out as Noise §12.3 says: four zero bytes, then the counter little-endian.
public enum ChaChaPoly {
    public static let keyByteCount = 32
    public static let tagByteCount = 16

    /// Encrypts and authenticates `plaintext` and authenticates `ad`; returns ciphertext || tag.
    /// The key length is a programming error, not an input error, hence a precondition.
    public static func seal(key: SecretBytes, nonce: UInt64, ad: [UInt8], plaintext: [UInt8]) -> [UInt8] {
        key.withUnsafeBytes { seal(rawKey: $0, nonce: noiseNonce(nonce), ad: ad, plaintext: plaintext) }
    }

    /// `seal` with a key given as plain bytes (test vectors).
    public static func seal(key: [UInt8], nonce: UInt64, ad: [UInt8], plaintext: [UInt8]) -> [UInt8] {
        key.withUnsafeBytes { seal(rawKey: $0, nonce: noiseNonce(nonce), ad: ad, plaintext: plaintext) }
    }

    /// Checks and decrypts ciphertext || tag. Throws when the tag does not verify (wrong key,
    /// nonce or ad, or a modified message); no plaintext is released in that case.
    public static func open(key: SecretBytes, nonce: UInt64, ad: [UInt8], ciphertext: [UInt8]) throws(CryptoError) -> [UInt8] {
        try key.withUnsafeBytes { open(rawKey: $0, nonce: noiseNonce(nonce), ad: ad, ciphertext: ciphertext) }.get()
    }

    /// `open` with a key given as plain bytes (test vectors).
    public static func open(key: [UInt8], nonce: UInt64, ad: [UInt8], ciphertext: [UInt8]) throws(CryptoError) -> [UInt8] {
        try key.withUnsafeBytes { open(rawKey: $0, nonce: noiseNonce(nonce), ad: ad, ciphertext: ciphertext) }.get()
    }

    /// `seal` with an arbitrary 12-byte IETF nonce: only for RFC 8439's vectors, whose nonce does
    /// not have Noise's layout.
    public static func seal(key: [UInt8], ietfNonce: [UInt8], ad: [UInt8], plaintext: [UInt8]) -> [UInt8] {
        key.withUnsafeBytes { seal(rawKey: $0, nonce: ietfNonce, ad: ad, plaintext: plaintext) }
    }

    /// `open` with an arbitrary 12-byte IETF nonce (RFC 8439's vectors).
    public static func open(key: [UInt8], ietfNonce: [UInt8], ad: [UInt8], ciphertext: [UInt8]) throws(CryptoError) -> [UInt8] {
        try key.withUnsafeBytes { open(rawKey: $0, nonce: ietfNonce, ad: ad, ciphertext: ciphertext) }.get()
    }

    /// Seals in place: `buffer` holds the plaintext followed by `tagByteCount` bytes of room, and
    /// ends up holding ciphertext || tag. No allocation and no copy: sessions seal chunk bytes
    /// where they already lie in the outgoing buffer (libsodium allows the output to be the input).
    public static func sealInPlace(key: SecretBytes, nonce: UInt64, _ buffer: UnsafeMutableRawBufferPointer) {
        precondition(buffer.count >= tagByteCount, "no room for the tag")
        Sodium.ready()
        let n = noiseNonceTuple(nonce)
        key.withUnsafeBytes { rawKey in
            precondition(rawKey.count == keyByteCount, "ChaCha20-Poly1305 key must be 32 bytes")
            withUnsafeBytes(of: n) { nonceBytes in
                let p = buffer.baseAddress!.assumingMemoryBound(to: UInt8.self)
                var outLength: UInt64 = 0
                _ = crypto_aead_chacha20poly1305_ietf_encrypt(
                    p, &outLength, p, UInt64(buffer.count - tagByteCount), nil, 0, nil,
                    nonceBytes.baseAddress!.assumingMemoryBound(to: UInt8.self), rawKey.bindMemory(to: UInt8.self).baseAddress!)
            }
        }
    }

    /// Checks `ciphertext` (ciphertext || tag) and writes its plaintext to `plaintext`, which must
    /// hold exactly `ciphertext.count - tagByteCount` bytes: sessions decrypt straight into their
    /// stream buffer. Returns false, releasing nothing, when the tag does not verify.
    public static func open(key: SecretBytes, nonce: UInt64, ciphertext: UnsafeRawBufferPointer,
                            into plaintext: UnsafeMutableRawBufferPointer) -> Bool {
        guard ciphertext.count >= tagByteCount, plaintext.count == ciphertext.count - tagByteCount else { return false }
        Sodium.ready()
        let n = noiseNonceTuple(nonce)
        return key.withUnsafeBytes { rawKey in
            precondition(rawKey.count == keyByteCount, "ChaCha20-Poly1305 key must be 32 bytes")
            return withUnsafeBytes(of: n) { nonceBytes in
                var outLength: UInt64 = 0
                // A zero-length plaintext still needs a valid pointer.
                var empty: UInt8 = 0
                let out = plaintext.baseAddress?.assumingMemoryBound(to: UInt8.self)
                return withUnsafeMutablePointer(to: &empty) { fallback in
                    crypto_aead_chacha20poly1305_ietf_decrypt(
                        out ?? fallback, &outLength, nil, ciphertext.baseAddress!.assumingMemoryBound(to: UInt8.self),
                        UInt64(ciphertext.count), nil, 0, nonceBytes.baseAddress!.assumingMemoryBound(to: UInt8.self),
                        rawKey.bindMemory(to: UInt8.self).baseAddress!) == 0
                }
            }
        }
    }

    /// `noiseNonce` without an allocation: 12 bytes, four zero bytes then the counter
    /// little-endian (three 32-bit words, so no padding).
    static func noiseNonceTuple(_ counter: UInt64) -> (UInt32, UInt32, UInt32) {
        (0, UInt32(truncatingIfNeeded: counter).littleEndian, UInt32(truncatingIfNeeded: counter >> 32).littleEndian)
    }

    /// The 12-byte IETF nonce for a Noise counter.
    static func noiseNonce(_ counter: UInt64) -> [UInt8] {
        [0, 0, 0, 0] + (0..<8).map { UInt8(truncatingIfNeeded: counter >> (8 * UInt64($0))) }
    }

    private static func seal(rawKey: UnsafeRawBufferPointer, nonce n: [UInt8], ad: [UInt8], plaintext: [UInt8]) -> [UInt8] {
        precondition(rawKey.count == keyByteCount, "ChaCha20-Poly1305 key must be 32 bytes")
        precondition(n.count == 12, "ChaCha20-Poly1305 IETF nonce must be 12 bytes")
        Sodium.ready()
        var out = [UInt8](repeating: 0, count: plaintext.count + tagByteCount)
        var outLength: UInt64 = 0
        plaintext.withUnsafeBufferPointer { p in
            ad.withUnsafeBufferPointer { a in
                _ = crypto_aead_chacha20poly1305_ietf_encrypt(
                    &out, &outLength, p.baseAddress, UInt64(p.count), a.baseAddress, UInt64(a.count),
                    nil, n, rawKey.bindMemory(to: UInt8.self).baseAddress!)
            }
        }
        return out
    }

    /// Returns a `Result` because the `withUnsafeBytes` callers only rethrow untyped errors.
    private static func open(rawKey: UnsafeRawBufferPointer, nonce n: [UInt8], ad: [UInt8], ciphertext: [UInt8]) -> Result<[UInt8], CryptoError> {
        precondition(rawKey.count == keyByteCount, "ChaCha20-Poly1305 key must be 32 bytes")
        guard ciphertext.count >= tagByteCount else {
            return .failure(.operationFailed("ChaCha20-Poly1305 ciphertext shorter than its tag"))
        }
        precondition(n.count == 12, "ChaCha20-Poly1305 IETF nonce must be 12 bytes")
        Sodium.ready()
        var out = [UInt8](repeating: 0, count: ciphertext.count - tagByteCount)
        var outLength: UInt64 = 0
        let rc = ciphertext.withUnsafeBufferPointer { c in
            ad.withUnsafeBufferPointer { a in
                crypto_aead_chacha20poly1305_ietf_decrypt(
                    &out, &outLength, nil, c.baseAddress!, UInt64(c.count), a.baseAddress, UInt64(a.count),
                    n, rawKey.bindMemory(to: UInt8.self).baseAddress!)
            }
        }
        guard rc == 0 else { return .failure(.operationFailed("ChaCha20-Poly1305 authentication failed")) }
        return .success(out)
    }
}
