internal import CSodium

/// Anonymous public-key encryption (libsodium's `crypto_box_seal`): an ephemeral X25519 key, the
/// recipient's X25519 key and XSalsa20-Poly1305. Private conversations hand each member the
/// epoch's group key this way: only the holder of the recipient's private key can open it, and a
/// box says nothing about who it is for.
public enum SealedBox {
    /// What sealing adds: the ephemeral public key (32) and the tag (16).
    public static let overheadByteCount = 48

    /// `plaintext` sealed to `recipient`; a fresh ephemeral key each time.
    public static func seal(_ plaintext: [UInt8], to recipient: X25519PublicKey) -> [UInt8] {
        Sodium.ready()
        var out = [UInt8](repeating: 0, count: plaintext.count + overheadByteCount)
        _ = crypto_box_seal(&out, plaintext, UInt64(plaintext.count), recipient.bytes)  // fails only on overflow
        return out
    }

    /// The plaintext of a box sealed to `recipient`'s public key, or nil when it was sealed to
    /// another key or changed.
    public static func open(_ box: [UInt8], with recipient: X25519PrivateKey) -> SecretBytes? {
        guard box.count >= overheadByteCount else { return nil }
        Sodium.ready()
        var out = [UInt8](repeating: 0, count: box.count - overheadByteCount)
        defer { sodium_memzero(&out, out.count) }
        let scalar = recipient.secretBytes()
        let rc = scalar.withUnsafeBytes { sk in
            crypto_box_seal_open(&out, box, UInt64(box.count), recipient.publicKey.bytes,
                                 sk.bindMemory(to: UInt8.self).baseAddress!)
        }
        return rc == 0 ? SecretBytes(out) : nil
    }
}

/// ISO/IEC 7816-4 padding (libsodium's `sodium_pad`/`sodium_unpad`): a 0x80 byte, then zeros up
/// to a multiple of the block size. Private records pad their plaintext to a size bucket so that
/// a ciphertext's length tells an observer only the bucket.
public enum Padding {
    /// `bytes` padded to a multiple of `blockSize` (always at least one byte added).
    public static func pad(_ bytes: [UInt8], blockSize: Int) -> [UInt8] {
        precondition(blockSize > 0)
        Sodium.ready()
        var buffer = bytes + [UInt8](repeating: 0, count: blockSize)
        var paddedLength = 0
        let rc = buffer.withUnsafeMutableBufferPointer { b in
            sodium_pad(&paddedLength, b.baseAddress!, bytes.count, blockSize, b.count)
        }
        precondition(rc == 0, "the buffer has room for a whole block")
        return Array(buffer[0..<paddedLength])
    }

    /// The bytes before the padding, or nil when `padded` is not padded to a multiple of
    /// `blockSize`.
    public static func unpad(_ padded: [UInt8], blockSize: Int) -> [UInt8]? {
        guard blockSize > 0, !padded.isEmpty, padded.count % blockSize == 0 else { return nil }
        Sodium.ready()
        var length = 0
        let rc = padded.withUnsafeBufferPointer { sodium_unpad(&length, $0.baseAddress!, padded.count, blockSize) }
        return rc == 0 ? Array(padded[0..<length]) : nil
    }

    /// `unpad` for bytes just opened by an AEAD: the same answer, in time that depends on the
    /// padding's length. libsodium's constant-time scan of the whole last block cost a member's
    /// node about a microsecond per sealed write; here the bytes are authenticated plaintext whose
    /// length the reader learns anyway, so the time hides nothing from anyone.
    public static func unpadAuthenticated(_ padded: [UInt8], blockSize: Int) -> [UInt8]? {
        guard blockSize > 0, !padded.isEmpty, padded.count % blockSize == 0 else { return nil }
        var index = padded.count - 1
        let first = padded.count - blockSize  // the padding lies in the last block
        while index >= first {
            switch padded[index] {
            case 0x80: return Array(padded[0..<index])
            case 0: index -= 1
            default: return nil
            }
        }
        return nil
    }
}
