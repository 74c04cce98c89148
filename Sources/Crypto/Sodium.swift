internal import CSodium

/// One place that initialises libsodium. `sodium_init` is idempotent and thread-safe
/// (https://doc.libsodium.org/usage), so every entry point of this module calls `Sodium.ready()`.
enum Sodium {
    /// Set once; libsodium's own flag makes repeated calls cheap.
    static func ready() {
        _ = sodiumReady
    }

    private static let sodiumReady: Bool = {
        guard sodium_init() >= 0 else {
            fatalError("libsodium could not be initialised")
        }
        return true
    }()
}

/// Cryptographically secure random bytes from libsodium's generator.
public func secureRandomBytes(_ count: Int) -> [UInt8] {
    Sodium.ready()
    var bytes = [UInt8](repeating: 0, count: count)
    bytes.withUnsafeMutableBytes { randombytes_buf($0.baseAddress!, $0.count) }
    return bytes
}

/// A `RandomNumberGenerator` backed by libsodium, for push ids and instance ids.
public struct SecureRandom: RandomNumberGenerator, Sendable {
    public init() { Sodium.ready() }

    public mutating func next() -> UInt64 {
        var value: UInt64 = 0
        withUnsafeMutableBytes(of: &value) { randombytes_buf($0.baseAddress!, 8) }
        return value
    }
}

/// Compares two byte sequences in time that depends only on their length, so secrets such as
/// API tokens can be checked without leaking where they differ.
public func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
    guard a.count == b.count else { return false }
    if a.isEmpty { return true }
    Sodium.ready()
    return a.withUnsafeBytes { pa in
        b.withUnsafeBytes { pb in sodium_memcmp(pa.baseAddress!, pb.baseAddress!, a.count) == 0 }
    }
}
