internal import CNettle

/// SHA-1, from Nettle. Two protocols the local API speaks are defined with it and need nothing
/// stronger: the websocket handshake's `Sec-WebSocket-Accept` (RFC 6455 §4.2.2) and the hash
/// the Firebase clients put on a transaction's write. Neither is a defence against a forger.
public enum SHA1 {
    /// The 20-byte digest of `bytes`.
    public static func digest(_ bytes: some Collection<UInt8>) -> [UInt8] {
        var context = sha1_ctx()
        nettle_sha1_init(&context)
        let contiguous = Array(bytes)
        contiguous.withUnsafeBufferPointer { buffer in
            nettle_sha1_update(&context, buffer.count, buffer.baseAddress)
        }
        var out = [UInt8](repeating: 0, count: 20)
        out.withUnsafeMutableBufferPointer { buffer in
            nettle_sha1_digest(&context, buffer.count, buffer.baseAddress)
        }
        return out
    }
}
