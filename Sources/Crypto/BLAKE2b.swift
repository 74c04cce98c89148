internal import CSodium

/// A 32-byte BLAKE2b-256 digest: record ids, blob and chunk hashes, set fingerprints.
public struct Digest32: Hashable, Sendable, Comparable, CustomStringConvertible {
    public static let byteCount = 32
    public let bytes: [UInt8]

    public init(bytes: some Collection<UInt8>) throws(CryptoError) {
        guard bytes.count == Self.byteCount else {
            throw .wrongLength(what: "digest", expected: Self.byteCount, got: bytes.count)
        }
        self.bytes = Array(bytes)
    }

    public var description: String { Hex.encode(bytes) }
    public static func < (a: Digest32, b: Digest32) -> Bool { a.bytes.lexicographicallyPrecedes(b.bytes) }

    /// The 32 bytes in one call: an array's own hashing feeds the hasher byte by byte, and
    /// digests are hashed on every set and dictionary access of a chunk fetch (equal digests
    /// have equal bytes, so this agrees with `==`).
    public func hash(into hasher: inout Hasher) {
        bytes.withUnsafeBytes { hasher.combine(bytes: $0) }
    }
}

/// BLAKE2b (RFC 7693) through libsodium's `crypto_generichash`.
public enum BLAKE2b {
    /// The unkeyed digest of `data`, `length` bytes long (16...64).
    public static func hash(_ data: some Collection<UInt8>, length: Int = 32, key: [UInt8] = []) -> [UInt8] {
        precondition((16...64).contains(length), "BLAKE2b output length must be 16...64")
        Sodium.ready()
        let data = Array(data)
        var out = [UInt8](repeating: 0, count: length)
        data.withUnsafeBufferPointer { d in
            key.withUnsafeBufferPointer { k in
                _ = crypto_generichash(&out, length, d.baseAddress, UInt64(d.count), k.baseAddress, k.count)
            }
        }
        return out
    }

    /// BLAKE2b-256 as a typed digest.
    public static func digest256(_ data: some Collection<UInt8>) -> Digest32 {
        try! Digest32(bytes: hash(data, length: 32))  // length is 32 by construction
    }

    /// An incremental hasher, for content that arrives in pieces (export streams, blobs).
    /// libsodium's state is an over-aligned C struct that Swift imports as opaque, so it lives in
    /// memory allocated here with the size and alignment libsodium asks for.
    public struct Hasher: ~Copyable {
        private let state: UnsafeMutableRawPointer
        private let length: Int

        public init(length: Int = 32) {
            Sodium.ready()
            self.length = length
            state = .allocate(byteCount: crypto_generichash_statebytes(), alignment: 64)
            crypto_generichash_init(OpaquePointer(state), nil, 0, length)
        }

        public mutating func update(_ data: some Collection<UInt8>) {
            let data = Array(data)
            data.withUnsafeBufferPointer { _ = crypto_generichash_update(OpaquePointer(state), $0.baseAddress, UInt64($0.count)) }
        }

        public consuming func finalize() -> [UInt8] {
            var out = [UInt8](repeating: 0, count: length)
            crypto_generichash_final(OpaquePointer(state), &out, length)
            return out
        }

        deinit {
            sodium_memzero(state, crypto_generichash_statebytes())
            state.deallocate()
        }
    }
}
