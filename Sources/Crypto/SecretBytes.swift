internal import CSodium

/// Bytes that must not outlive their use: held in memory the owner allocates itself (never a
/// copy-on-write array that could leave copies behind) and wiped with `sodium_memzero` on deinit.
public final class SecretBytes: @unchecked Sendable {
    // Immutable after init, so sharing across threads is safe.
    private let storage: UnsafeMutableRawBufferPointer

    /// Copies `bytes` in; the caller should wipe its own copy if it can.
    public init(_ bytes: some Collection<UInt8>) {
        storage = .allocate(byteCount: max(bytes.count, 1), alignment: 16)
        _ = UnsafeMutableRawBufferPointer(rebasing: storage[0..<bytes.count]).initializeMemory(as: UInt8.self, from: bytes)
        count = bytes.count
    }

    /// The number of secret bytes.
    public let count: Int

    /// Gives temporary read access to the secret.
    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try body(UnsafeRawBufferPointer(rebasing: storage[0..<count]))
    }

    /// A copy as an ordinary array, for the few places that must write the secret out (the key file).
    public func copyBytes() -> [UInt8] {
        withUnsafeBytes { Array($0) }
    }

    deinit {
        sodium_memzero(storage.baseAddress!, storage.count)
        storage.deallocate()
    }
}
