internal import CSodium

/// A 32-byte BLAKE2b-256 digest: record ids, blob and chunk hashes, set fingerprints.
///
/// Held inline as four words, not in an array: ids are made, copied, hashed and compared
/// millions of times in a sync (held, arriving, asked for, in every record), and an array put
/// each one on the heap of its own, with a reference count touched at every copy and a pointer
/// to follow at every comparison.
public struct Digest32: Hashable, Sendable, Comparable, CustomStringConvertible {
    public static let byteCount = 32
    /// The bytes in memory order, eight to a word.
    private let words: (UInt64, UInt64, UInt64, UInt64)

    public init(bytes: some Collection<UInt8>) throws(CryptoError) {
        guard bytes.count == Self.byteCount else {
            throw .wrongLength(what: "digest", expected: Self.byteCount, got: bytes.count)
        }
        var words: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
        Swift.withUnsafeMutableBytes(of: &words) { $0.copyBytes(from: bytes) }
        self.words = words
    }

    /// Fills the 32 bytes in place (`fill` writes all of them).
    init(filling fill: (UnsafeMutableRawBufferPointer) -> Void) {
        var words: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
        Swift.withUnsafeMutableBytes(of: &words, fill)
        self.words = words
    }

    /// The 32 bytes, as a new array.
    public var bytes: [UInt8] { withUnsafeBytes { Array($0) } }

    /// The 32 bytes in place, for as long as `body` runs.
    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try Swift.withUnsafeBytes(of: words, body)
    }

    public var description: String { Hex.encode(bytes) }

    /// Bytewise order: each word read most significant byte first.
    public static func < (a: Digest32, b: Digest32) -> Bool {
        (a.words.0.bigEndian, a.words.1.bigEndian, a.words.2.bigEndian, a.words.3.bigEndian)
            < (b.words.0.bigEndian, b.words.1.bigEndian, b.words.2.bigEndian, b.words.3.bigEndian)
    }

    public static func == (a: Digest32, b: Digest32) -> Bool { a.words == b.words }

    /// All four words: a digest a peer names (in a reconciliation message, a want) is any 32
    /// bytes it likes, not necessarily a hash of anything, so hashing fewer would let it send
    /// ids that all land in one bucket of the sets a round keeps.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(words.0)
        hasher.combine(words.1)
        hasher.combine(words.2)
        hasher.combine(words.3)
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
        Sodium.ready()
        let data = Array(data)
        return Digest32 { raw in
            raw.withMemoryRebound(to: UInt8.self) { out in
                data.withUnsafeBufferPointer { d in
                    _ = crypto_generichash(out.baseAddress!, Digest32.byteCount, d.baseAddress, UInt64(d.count), nil, 0)
                }
            }
        }
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
