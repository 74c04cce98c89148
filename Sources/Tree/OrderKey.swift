/// Byte strings whose bytewise order is Firebase's order (`FirebaseOrder`), so that an index in
/// the store (SQLite compares blobs with memcmp, then by length) can answer `orderBy` queries with
/// range scans instead of sorting whole locations.
///
/// Two encodings, kept in separate columns so neither needs to be prefix-free against the other:
/// - `key(_:)`: a child key in key order: canonical 32-bit integer keys first, numerically, then
///   every other key by UTF-16 code units (as JavaScript compares strings);
/// - `value(_:)`: an ordering value in value order: null < false < true < numbers (numerically)
///   < strings (by UTF-16 code units) < objects (which all tie). Ties are broken by the key column.
public enum OrderKey {
    /// The key's position in key order.
    ///
    /// An integer key is `0x00` and its value offset into 0...2^32-1, big-endian. Any other key is
    /// `0x01` and its text with each scalar mapped to its rank in UTF-16 order (`utf16Rank`),
    /// written in UTF-8's variable-length form, which keeps numeric order. ASCII keys (push ids,
    /// user ids) are thus `0x01` and their own bytes.
    public static func key(_ key: String) -> [UInt8] {
        if let integer = FirebaseOrder.integerKey(key) {
            let biased = UInt32(bitPattern: integer) ^ 0x8000_0000
            return [0x00, UInt8(biased >> 24), UInt8(truncatingIfNeeded: biased >> 16),
                    UInt8(truncatingIfNeeded: biased >> 8), UInt8(truncatingIfNeeded: biased)]
        }
        var bytes: [UInt8] = [0x01]
        appendText(key, to: &bytes)
        return bytes
    }

    /// The key that `key(_:)` encoded, or nil for bytes it cannot have produced.
    public static func decodeKey(_ bytes: some Collection<UInt8>) -> String? {
        let bytes = Array(bytes)
        guard let tag = bytes.first else { return nil }
        if tag == 0x00 {
            guard bytes.count == 5 else { return nil }
            let biased = bytes[1...].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
            return String(Int32(bitPattern: biased ^ 0x8000_0000))
        }
        guard tag == 0x01 else { return nil }
        var scalars = String.UnicodeScalarView()
        var index = 1
        while index < bytes.count {
            let lead = bytes[index]
            let length = lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4
            guard index + length <= bytes.count else { return nil }
            var rank = length == 1 ? UInt32(lead) : UInt32(lead) & (0xFF >> (length + 1))
            for offset in 1..<length { rank = rank << 6 | UInt32(bytes[index + offset] & 0x3F) }
            let value: UInt32
            if rank < 0xD800 { value = rank } else if rank < 0x10_D800 { value = rank - 0xD800 + 0x10000 } else { value = rank - 0x10_D800 + 0xE000 }
            guard let scalar = Unicode.Scalar(value) else { return nil }
            scalars.append(scalar)
            index += length
        }
        return String(scalars)
    }

    /// The value's position in value order (see the type's description). Numbers are the IEEE
    /// bits made to sort as unsigned integers, with -0 taken as 0 (they compare equal).
    public static func value(_ value: JSONValue) -> [UInt8] {
        switch value {
        case .null: return [0x00]
        case .bool(false): return [0x01]
        case .bool(true): return [0x02]
        case .number(let number):
            let bits = (number == 0 ? 0.0 : number).bitPattern
            let ordered = number < 0 ? ~bits : bits | 0x8000_0000_0000_0000
            var bytes: [UInt8] = [0x03]
            for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: ordered >> UInt64(shift))) }
            return bytes
        case .string(let text):
            var bytes: [UInt8] = [0x04]
            appendText(text, to: &bytes)
            return bytes
        case .object, .array:
            return [0x05]
        }
    }

    /// The rank of a scalar in UTF-16 code unit order: below U+D800 its own value; scalars beyond
    /// U+FFFF (written with surrogates, D800-DFFF) next; U+E000-U+FFFF last.
    static func utf16Rank(_ scalar: Unicode.Scalar) -> UInt32 {
        let value = scalar.value
        if value < 0xD800 { return value }
        if value >= 0x10000 { return value - 0x10000 + 0xD800 }
        return value - 0xE000 + 0x10_D800
    }

    /// Appends each scalar's rank in the UTF-8 layout (1 to 4 bytes, ranks up to 0x1FFFFF), which
    /// orders byte strings as it orders the numbers they hold, and ends no encoding inside another.
    private static func appendText(_ text: String, to bytes: inout [UInt8]) {
        if CanonicalText.isASCII(text) {
            bytes.append(contentsOf: text.utf8)
            return
        }
        for scalar in text.unicodeScalars {
            let rank = utf16Rank(scalar)
            switch rank {
            case ..<0x80:
                bytes.append(UInt8(rank))
            case ..<0x800:
                bytes += [0xC0 | UInt8(rank >> 6), 0x80 | UInt8(rank & 0x3F)]
            case ..<0x10000:
                bytes += [0xE0 | UInt8(rank >> 12), 0x80 | UInt8((rank >> 6) & 0x3F), 0x80 | UInt8(rank & 0x3F)]
            default:
                bytes += [0xF0 | UInt8(rank >> 18), 0x80 | UInt8((rank >> 12) & 0x3F), 0x80 | UInt8((rank >> 6) & 0x3F),
                          0x80 | UInt8(rank & 0x3F)]
            }
        }
    }
}
