/// Negentropy's varint: big-endian base-128 digits, high bit set on every byte but the last.
///
/// Most-significant-first (unlike LEB128) is what the v1 wire format fixes; the encoder always
/// emits the shortest form and the decoder rejects anything else, so each value has one encoding.
enum NegentropyVarint {
    /// The longest encoding of a `UInt64`: 64 bits in 7-bit digits.
    static let maxLength = 10

    static func append(_ value: UInt64, to out: inout [UInt8]) {
        var digits = 1
        while digits < maxLength, value >> UInt64(7 * digits) != 0 { digits += 1 }
        var position = digits - 1
        while position >= 0 {
            let digit = UInt8(truncatingIfNeeded: value >> UInt64(7 * position)) & 0x7F
            out.append(position == 0 ? digit : digit | 0x80)
            position -= 1
        }
    }

    static func encode(_ value: UInt64) -> [UInt8] {
        var out = [UInt8]()
        append(value, to: &out)
        return out
    }

    /// Encoded size of `value`, for frame-size arithmetic without encoding.
    static func length(_ value: UInt64) -> Int {
        var digits = 1
        while digits < maxLength, value >> UInt64(7 * digits) != 0 { digits += 1 }
        return digits
    }
}
