/// The subset of CBOR (RFC 8949) that lanchat speaks, in its deterministic form: definite lengths,
/// shortest arguments, map keys sorted by their encoded bytes and unique, no tags, no `undefined`.
/// One value has exactly one encoding, so a record's bytes (and so its id and signature) follow
/// from its content alone.
///
/// Not `indirect`: arrays and maps hold their items in arrays already, and an indirect enum
/// would put every item, down to each integer of a record, in a heap allocation of its own.
public enum CBOR: Hashable, Sendable {
    case unsigned(UInt64)
    /// The negative integer `-1 - n`.
    case negative(UInt64)
    case bytes([UInt8])
    case text(String)
    case array([CBOR])
    /// Pairs in any order; the encoder sorts them canonically.
    case map([CBORPair])
    case bool(Bool)
    case null
    /// A finite float; the encoder picks the shortest of half, single and double precision that
    /// keeps the value exactly (RFC 8949 §4.2.1 "preferred serialization").
    case float(Double)
}

/// One key/value entry of a CBOR map.
public struct CBORPair: Hashable, Sendable {
    public var key: CBOR
    public var value: CBOR
    public init(_ key: CBOR, _ value: CBOR) {
        self.key = key
        self.value = value
    }
}

extension CBOR {
    /// The deterministic encoding.
    public func encoded() -> [UInt8] {
        var out = [UInt8]()
        encode(into: &out)
        return out
    }

    /// Appends the deterministic encoding to `out`.
    public func encode(into out: inout [UInt8]) {
        switch self {
        case let .unsigned(n): CBOR.writeHead(0, n, &out)
        case let .negative(n): CBOR.writeHead(1, n, &out)
        case let .bytes(b):
            CBOR.writeHead(2, UInt64(b.count), &out)
            out.append(contentsOf: b)
        case let .text(s):
            let utf8 = Array(s.utf8)
            CBOR.writeHead(3, UInt64(utf8.count), &out)
            out.append(contentsOf: utf8)
        case let .array(items):
            CBOR.writeHead(4, UInt64(items.count), &out)
            for item in items { item.encode(into: &out) }
        case let .map(pairs):
            CBOR.writeHead(5, UInt64(pairs.count), &out)
            if let textKeys = CBOR.textKeyed(pairs) {
                // Text keys (tree objects): their encodings sort by length, then bytes, so no
                // key needs encoding just to be compared.
                for (key, value) in textKeys.sorted(by: { $0.0.count != $1.0.count ? $0.0.count < $1.0.count : $0.0.lexicographicallyPrecedes($1.0) }) {
                    CBOR.writeHead(3, UInt64(key.count), &out)
                    out.append(contentsOf: key)
                    value.encode(into: &out)
                }
                return
            }
            let encoded = pairs.map { ($0.key.encoded(), $0.value) }
                .sorted { $0.0.lexicographicallyPrecedes($1.0) }
            for (key, value) in encoded {
                out.append(contentsOf: key)
                value.encode(into: &out)
            }
        case let .bool(b): out.append(b ? 0xF5 : 0xF4)
        case .null: out.append(0xF6)
        case let .float(d): CBOR.writeFloat(d, &out)
        }
    }

    /// The pairs as (UTF-8 key, value) when every key is text.
    static func textKeyed(_ pairs: [CBORPair]) -> [([UInt8], CBOR)]? {
        var out = [([UInt8], CBOR)]()
        out.reserveCapacity(pairs.count)
        for pair in pairs {
            guard case let .text(key) = pair.key else { return nil }
            out.append((Array(key.utf8), pair.value))
        }
        return out
    }

    /// Writes a major type and its argument in the shortest form.
    static func writeHead(_ major: UInt8, _ n: UInt64, _ out: inout [UInt8]) {
        let m = major << 5
        switch n {
        case 0..<24: out.append(m | UInt8(n))
        case 24...0xFF: out.append(contentsOf: [m | 24, UInt8(n)])
        case 0x100...0xFFFF: out.append(m | 25); appendBigEndian(n, bytes: 2, &out)
        case 0x1_0000...0xFFFF_FFFF: out.append(m | 26); appendBigEndian(n, bytes: 4, &out)
        default: out.append(m | 27); appendBigEndian(n, bytes: 8, &out)
        }
    }

    static func writeFloat(_ d: Double, _ out: inout [UInt8]) {
        let half = Float16(d)
        if Double(half) == d {
            out.append(0xF9)
            appendBigEndian(UInt64(half.bitPattern), bytes: 2, &out)
            return
        }
        let single = Float(d)
        if Double(single) == d {
            out.append(0xFA)
            appendBigEndian(UInt64(single.bitPattern), bytes: 4, &out)
            return
        }
        out.append(0xFB)
        appendBigEndian(d.bitPattern, bytes: 8, &out)
    }
}

/// Appends the low `bytes` bytes of `n`, most significant first.
func appendBigEndian(_ n: UInt64, bytes: Int, _ out: inout [UInt8]) {
    for i in stride(from: bytes - 1, through: 0, by: -1) {
        out.append(UInt8(truncatingIfNeeded: n >> UInt64(8 * i)))
    }
}
