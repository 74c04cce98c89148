internal import CSodium

/// XChaCha20-Poly1305 (libsodium's IETF construction) with a random 24-byte nonce per message.
/// Used for datagrams (beacons, pushed records), where no counter can be shared between sender
/// and receivers; 192-bit random nonces make reuse negligible.
public enum XChaChaPoly {
    public static let keyByteCount = 32
    public static let nonceByteCount = 24
    public static let tagByteCount = 16

    /// `nonce || ciphertext || tag` of `plaintext` under `key`, with `ad` authenticated too.
    public static func seal(_ plaintext: [UInt8], key: SecretBytes, ad: [UInt8] = []) -> [UInt8] {
        seal(plaintext, key: key, ad: ad, nonce: secureRandomBytes(nonceByteCount))
    }

    /// Sealing with a given nonce, for test vectors only: a nonce must never be used twice
    /// with one key.
    public static func seal(_ plaintext: [UInt8], key: SecretBytes, ad: [UInt8], nonce: [UInt8]) -> [UInt8] {
        precondition(key.count == keyByteCount, "XChaCha20-Poly1305 keys are 32 bytes")
        precondition(nonce.count == nonceByteCount, "XChaCha20-Poly1305 nonces are 24 bytes")
        Sodium.ready()
        var out = [UInt8](repeating: 0, count: plaintext.count + tagByteCount)
        var outLength: UInt64 = 0
        key.withUnsafeBytes { k in
            _ = crypto_aead_xchacha20poly1305_ietf_encrypt(
                &out, &outLength, plaintext, UInt64(plaintext.count), ad, UInt64(ad.count), nil, nonce,
                k.bindMemory(to: UInt8.self).baseAddress!)
        }
        return nonce + out
    }

    /// The plaintext of a sealed message, or `nil` if it was not sealed under `key` and `ad` or
    /// was changed in any way.
    public static func open(_ sealed: [UInt8], key: SecretBytes, ad: [UInt8] = []) -> [UInt8]? {
        precondition(key.count == keyByteCount, "XChaCha20-Poly1305 keys are 32 bytes")
        guard sealed.count >= nonceByteCount + tagByteCount else { return nil }
        Sodium.ready()
        let nonce = Array(sealed[0..<nonceByteCount])
        let ciphertext = Array(sealed[nonceByteCount...])
        var out = [UInt8](repeating: 0, count: ciphertext.count - tagByteCount)
        var outLength: UInt64 = 0
        let rc = key.withUnsafeBytes { k in
            crypto_aead_xchacha20poly1305_ietf_decrypt(
                &out, &outLength, nil, ciphertext, UInt64(ciphertext.count), ad, UInt64(ad.count), nonce,
                k.bindMemory(to: UInt8.self).baseAddress!)
        }
        return rc == 0 ? out : nil
    }
}
