/// The running sum behind a fingerprint: ids added as 256-bit little-endian integers mod 2^256.
///
/// Addition is order-independent, so two peers holding the same ids agree on the sum however
/// they iterate. Four 64-bit limbs with carries keep the per-item cost to a handful of instructions.
struct NegentropyAccumulator: Sendable {
    /// Limb 0 is the least significant 64 bits, i.e. id bytes 0...7 read little-endian.
    private(set) var limbs: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)

    /// Adds one id. A big-endian word byte-swapped is the little-endian value of the same bytes.
    @inline(__always)
    mutating func add(_ id: NegentropyPackedID) {
        let (s0, c0) = limbs.0.addingReportingOverflow(id.w0.byteSwapped)
        var (s1, c1) = limbs.1.addingReportingOverflow(id.w1.byteSwapped)
        if c0 { let (t, c) = s1.addingReportingOverflow(1); s1 = t; c1 = c1 || c }
        var (s2, c2) = limbs.2.addingReportingOverflow(id.w2.byteSwapped)
        if c1 { let (t, c) = s2.addingReportingOverflow(1); s2 = t; c2 = c2 || c }
        var s3 = limbs.3 &+ id.w3.byteSwapped
        if c2 { s3 = s3 &+ 1 }
        limbs = (s0, s1, s2, s3)
    }

    /// Subtracts the sum `other` (mod 2^256): the sum of a range is the sum up to its end less
    /// the sum up to its start (`NegentropySortedItems`).
    @inline(__always)
    mutating func subtract(_ other: NegentropyAccumulator) {
        let (d0, b0) = limbs.0.subtractingReportingOverflow(other.limbs.0)
        var (d1, b1) = limbs.1.subtractingReportingOverflow(other.limbs.1)
        if b0 { let (t, b) = d1.subtractingReportingOverflow(1); d1 = t; b1 = b1 || b }
        var (d2, b2) = limbs.2.subtractingReportingOverflow(other.limbs.2)
        if b1 { let (t, b) = d2.subtractingReportingOverflow(1); d2 = t; b2 = b2 || b }
        var d3 = limbs.3 &- other.limbs.3
        if b2 { d3 = d3 &- 1 }
        limbs = (d0, d1, d2, d3)
    }

    /// The sum as 32 little-endian bytes, as the fingerprint hashes it.
    var bytes: [UInt8] {
        [UInt8](unsafeUninitializedCapacity: 32) { buffer, initialized in
            let raw = UnsafeMutableRawBufferPointer(buffer)
            raw.storeBytes(of: limbs.0.littleEndian, toByteOffset: 0, as: UInt64.self)
            raw.storeBytes(of: limbs.1.littleEndian, toByteOffset: 8, as: UInt64.self)
            raw.storeBytes(of: limbs.2.littleEndian, toByteOffset: 16, as: UInt64.self)
            raw.storeBytes(of: limbs.3.littleEndian, toByteOffset: 24, as: UInt64.self)
            initialized = 32
        }
    }

    /// Fingerprint of `count` ids with this sum: the first 16 bytes of
    /// SHA-256(sum || varint(count)). Hashing hides the linear structure of the sum, so a peer
    /// cannot forge a matching fingerprint for a different set by choosing ids.
    func fingerprint(count: Int) -> [UInt8] {
        var input = bytes
        NegentropyVarint.append(UInt64(count), to: &input)
        return Array(NegentropySHA256.hash(input).prefix(NegentropyFingerprint.length))
    }
}

/// Constants and helpers for range fingerprints.
enum NegentropyFingerprint {
    /// Bytes of a fingerprint on the wire.
    static let length = 16

    /// The fingerprint of any collection of 32-byte ids (used by tests and for clarity).
    static func of(_ ids: [[UInt8]]) -> [UInt8] {
        var sum = NegentropyAccumulator()
        for id in ids { sum.add(NegentropyPackedID(bytes: id)) }
        return sum.fingerprint(count: ids.count)
    }
}

/// The fingerprint of a whole set kept up to date as ids are added (one addition each), for a
/// node that announces its set's fingerprint in every beacon and hello.
public struct NegentropyRunningFingerprint: Sendable {
    private var sum = NegentropyAccumulator()
    public private(set) var count = 0

    public init() {}

    /// Adds one 32-byte id (the caller adds each id once).
    public mutating func add(_ id: [UInt8]) {
        sum.add(NegentropyPackedID(bytes: id))
        count += 1
    }

    /// Adds one id from the 32 bytes at `id`, read a word at a time: the node adds every
    /// record's id this way when it loads its set at start-up, a million of them at a time.
    public mutating func add(_ id: UnsafeRawBufferPointer) {
        precondition(id.count == NegentropyItem.idLength, "an id is 32 bytes")
        func word(_ index: Int) -> UInt64 { UInt64(bigEndian: id.loadUnaligned(fromByteOffset: 8 * index, as: UInt64.self)) }
        sum.add(NegentropyPackedID(w0: word(0), w1: word(1), w2: word(2), w3: word(3)))
        count += 1
    }

    /// Negentropy's fingerprint of the ids added so far.
    public var fingerprint: [UInt8] { sum.fingerprint(count: count) }
}
