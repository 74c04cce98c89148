/// One element of a reconciled set: a record's hybrid-logical-clock value and its 32-byte id.
///
/// Negentropy orders items by timestamp first so that recent records cluster at the end of the
/// keyspace: two nodes that were in sync until recently then disagree only in the last ranges,
/// which reconcile in few round trips. The id breaks ties so the order is total.
public struct NegentropyItem: Comparable, Hashable, Sendable, CustomStringConvertible {
    /// Length of every id, fixed by the protocol.
    public static let idLength = 32

    /// The record's hybrid-logical-clock value; `UInt64.max` is reserved by the protocol as "infinity".
    public let timestamp: UInt64
    /// The record id, always exactly `idLength` bytes.
    public let id: [UInt8]

    /// Returns nil when `id` is not 32 bytes or `timestamp` is the reserved infinity value,
    /// because such an item cannot be placed in the protocol's keyspace; records come from peers,
    /// so this is a value to reject rather than a programming error to trap on.
    public init?(timestamp: UInt64, id: [UInt8]) {
        guard id.count == Self.idLength, timestamp != .max else { return nil }
        self.timestamp = timestamp
        self.id = id
    }

    /// Protocol order: timestamp, then id bytes compared lexicographically.
    public static func < (lhs: NegentropyItem, rhs: NegentropyItem) -> Bool {
        if lhs.timestamp != rhs.timestamp { return lhs.timestamp < rhs.timestamp }
        return lhs.id.lexicographicallyPrecedes(rhs.id)
    }

    /// Timestamp and the first four id bytes in hex, enough to tell items apart in logs.
    public var description: String {
        "\(timestamp):" + id.prefix(4).map { byte in
            let hex = String(byte, radix: 16)
            return byte < 16 ? "0" + hex : hex
        }.joined() + "…"
    }
}

/// An item packed into five machine words: the timestamp and the id as four big-endian words.
///
/// Big-endian words compare like the id bytes, so ordering and binary search touch only integers;
/// byte-swapping a word yields the little-endian limb the fingerprint sum needs.
struct NegentropyPackedItem: Comparable, Hashable, Sendable {
    var timestamp: UInt64
    var id: NegentropyPackedID

    init(timestamp: UInt64, id: NegentropyPackedID) {
        self.timestamp = timestamp
        self.id = id
    }

    init(_ item: NegentropyItem) {
        self.timestamp = item.timestamp
        self.id = NegentropyPackedID(item.id, at: 0)
    }

    static func < (lhs: NegentropyPackedItem, rhs: NegentropyPackedItem) -> Bool {
        if lhs.timestamp != rhs.timestamp { return lhs.timestamp < rhs.timestamp }
        return lhs.id < rhs.id
    }

    var item: NegentropyItem {
        NegentropyItem(timestamp: timestamp, id: id.bytes)!
    }
}

/// A 32-byte id as four big-endian words (word 0 holds bytes 0...7); also the hash key used to
/// match id lists without allocating per id.
struct NegentropyPackedID: Comparable, Hashable, Sendable {
    var w0: UInt64, w1: UInt64, w2: UInt64, w3: UInt64

    static let zero = NegentropyPackedID(w0: 0, w1: 0, w2: 0, w3: 0)

    init(w0: UInt64, w1: UInt64, w2: UInt64, w3: UInt64) {
        self.w0 = w0; self.w1 = w1; self.w2 = w2; self.w3 = w3
    }

    /// Packs up to 32 bytes; missing trailing bytes are zero, which is exactly how the protocol
    /// pads a bound's id prefix.
    init<C: Collection>(bytes: C) where C.Element == UInt8 {
        var words: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
        var index = 0
        for byte in bytes.prefix(32) {
            let shift = UInt64(56 - 8 * (index % 8))
            let value = UInt64(byte) << shift
            switch index / 8 {
            case 0: words.0 |= value
            case 1: words.1 |= value
            case 2: words.2 |= value
            default: words.3 |= value
            }
            index += 1
        }
        self.init(w0: words.0, w1: words.1, w2: words.2, w3: words.3)
    }

    /// Reads a whole id from `bytes` at `offset` (the caller has checked 32 bytes remain).
    init(_ bytes: [UInt8], at offset: Int) {
        self = bytes.withUnsafeBytes { raw in
            func word(_ index: Int) -> UInt64 {
                UInt64(bigEndian: raw.loadUnaligned(fromByteOffset: offset + 8 * index, as: UInt64.self))
            }
            return NegentropyPackedID(w0: word(0), w1: word(1), w2: word(2), w3: word(3))
        }
    }

    static func < (lhs: NegentropyPackedID, rhs: NegentropyPackedID) -> Bool {
        if lhs.w0 != rhs.w0 { return lhs.w0 < rhs.w0 }
        if lhs.w1 != rhs.w1 { return lhs.w1 < rhs.w1 }
        if lhs.w2 != rhs.w2 { return lhs.w2 < rhs.w2 }
        return lhs.w3 < rhs.w3
    }

    /// Byte `index` (0...31) of the id.
    func byte(_ index: Int) -> UInt8 {
        let word: UInt64
        switch index / 8 {
        case 0: word = w0
        case 1: word = w1
        case 2: word = w2
        default: word = w3
        }
        return UInt8(truncatingIfNeeded: word >> UInt64(56 - 8 * (index % 8)))
    }

    /// The 32 id bytes, written a word at a time.
    var bytes: [UInt8] {
        [UInt8](unsafeUninitializedCapacity: 32) { buffer, initialized in
            let raw = UnsafeMutableRawBufferPointer(buffer)
            raw.storeBytes(of: w0.bigEndian, toByteOffset: 0, as: UInt64.self)
            raw.storeBytes(of: w1.bigEndian, toByteOffset: 8, as: UInt64.self)
            raw.storeBytes(of: w2.bigEndian, toByteOffset: 16, as: UInt64.self)
            raw.storeBytes(of: w3.bigEndian, toByteOffset: 24, as: UInt64.self)
            initialized = 32
        }
    }

    /// Appends the first `count` bytes (all 32 by default).
    func appendBytes(to out: inout [UInt8], count: Int = 32) {
        if count == 32 {
            out.append(contentsOf: bytes)
        } else {
            for index in 0..<count { out.append(byte(index)) }
        }
    }
}
