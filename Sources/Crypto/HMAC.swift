internal import CSodium

/// HMAC (RFC 2104) over unkeyed BLAKE2b-512, as Noise §4.3 defines `HMAC-HASH` for BLAKE2b:
/// a 128-byte block and a 64-byte output. libsodium's keyed BLAKE2b is a different construction
/// and would not interoperate, so HMAC is built here from plain `crypto_generichash`.
public enum HMACBLAKE2b {
    public static let blockByteCount = 128
    public static let outputByteCount = 64

    /// HMAC-BLAKE2b(key, message). The result is secret whenever the key is (Noise chaining keys).
    public static func authenticate(key: SecretBytes, message: [UInt8]) -> SecretBytes {
        key.withUnsafeBytes { authenticate(rawKey: $0, parts: [message]) }
    }

    /// `authenticate` with a plain-bytes key (test vectors).
    public static func authenticate(key: [UInt8], message: [UInt8]) -> [UInt8] {
        key.withUnsafeBytes { authenticate(rawKey: $0, parts: [message]) }.copyBytes()
    }

    /// The MAC of the concatenation of `parts`, without building that concatenation (HKDF MACs
    /// `output || counter`, and the previous output is secret).
    static func authenticate(key: SecretBytes, parts: [[UInt8]]) -> SecretBytes {
        key.withUnsafeBytes { authenticate(rawKey: $0, parts: parts) }
    }

    static func authenticate(rawKey: UnsafeRawBufferPointer, parts: [[UInt8]]) -> SecretBytes {
        Sodium.ready()
        // A key longer than a block is first hashed, as RFC 2104 requires; then it is zero-padded.
        var block = [UInt8](repeating: 0, count: blockByteCount)
        if rawKey.count > blockByteCount {
            var hashed = [UInt8](repeating: 0, count: outputByteCount)
            crypto_generichash(&hashed, outputByteCount, rawKey.bindMemory(to: UInt8.self).baseAddress, UInt64(rawKey.count), nil, 0)
            block.replaceSubrange(0..<outputByteCount, with: hashed)
            sodium_memzero(&hashed, hashed.count)
        } else if rawKey.count > 0 {
            block.replaceSubrange(0..<rawKey.count, with: rawKey)
        }
        var inner = [UInt8](repeating: 0, count: outputByteCount)
        var outer = [UInt8](repeating: 0, count: outputByteCount)
        var pad = [UInt8](repeating: 0, count: blockByteCount)
        defer {
            sodium_memzero(&block, block.count)
            sodium_memzero(&inner, inner.count)
            sodium_memzero(&outer, outer.count)
            sodium_memzero(&pad, pad.count)
        }
        for i in 0..<blockByteCount { pad[i] = block[i] ^ 0x36 }
        hash(pad, parts, into: &inner)
        for i in 0..<blockByteCount { pad[i] = block[i] ^ 0x5c }
        hash(pad, [inner], into: &outer)
        return SecretBytes(outer)
    }

    /// BLAKE2b-512(first || parts...) with libsodium's incremental API; the state holds key
    /// material, so it is wiped before it is freed.
    private static func hash(_ first: [UInt8], _ parts: [[UInt8]], into out: inout [UInt8]) {
        let size = crypto_generichash_statebytes()
        let state = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 64)
        defer {
            sodium_memzero(state, size)
            state.deallocate()
        }
        let st = OpaquePointer(state)
        crypto_generichash_init(st, nil, 0, outputByteCount)
        for piece in [first] + parts {
            piece.withUnsafeBufferPointer { _ = crypto_generichash_update(st, $0.baseAddress, UInt64($0.count)) }
        }
        crypto_generichash_final(st, &out, outputByteCount)
    }
}
