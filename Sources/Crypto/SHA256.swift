internal import CSodium

/// SHA-256 through libsodium: Negentropy's fingerprints are defined with it.
public enum SHA256 {
    public static func hash(_ data: some Collection<UInt8>) -> [UInt8] {
        Sodium.ready()
        let data = Array(data)
        var out = [UInt8](repeating: 0, count: 32)
        data.withUnsafeBufferPointer { _ = crypto_hash_sha256(&out, $0.baseAddress, UInt64($0.count)) }
        return out
    }
}
