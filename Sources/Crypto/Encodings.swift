/// Lower-case hexadecimal, for digests in logs, tests and Protocol.md vectors.
public enum Hex {
    private static let digits = Array("0123456789abcdef".utf8)

    public static func encode(_ bytes: some Sequence<UInt8>) -> String {
        var out = [UInt8]()
        for b in bytes {
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 0xF)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Decodes hex (either case; spaces and newlines ignored so vectors can be wrapped). `nil` on
    /// any other character or an odd digit count.
    public static func decode(_ text: String) -> [UInt8]? {
        var out = [UInt8]()
        var high: UInt8?
        for c in text.utf8 {
            let v: UInt8
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): v = c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): v = c - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): v = c - UInt8(ascii: "A") + 10
            case UInt8(ascii: " "), UInt8(ascii: "\n"), UInt8(ascii: "\t"): continue
            default: return nil
            }
            if let h = high { out.append(h << 4 | v); high = nil } else { high = v }
        }
        return high == nil ? out : nil
    }
}

/// Unpadded base64url (RFC 4648 §5): user ids are public keys in this form because it is a
/// valid Firebase key (no `. # $ / [ ]`).
public enum Base64URL {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
    private static let reverse: [Int8] = {
        var table = [Int8](repeating: -1, count: 256)
        for (i, c) in alphabet.enumerated() { table[Int(c)] = Int8(i) }
        return table
    }()

    /// Written straight into the string's storage: a user id is worked out from its key for
    /// every record a node stores, so this runs a million times in a year's sync.
    public static func encode(_ bytes: [UInt8]) -> String {
        let length = (bytes.count * 4 + 2) / 3
        return alphabet.withUnsafeBufferPointer { alphabet in
            String(unsafeUninitializedCapacity: length) { out in
                var i = 0, o = 0
                while i + 3 <= bytes.count {
                    let n = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8 | UInt32(bytes[i + 2])
                    out[o] = alphabet[Int(n >> 18)]
                    out[o + 1] = alphabet[Int((n >> 12) & 63)]
                    out[o + 2] = alphabet[Int((n >> 6) & 63)]
                    out[o + 3] = alphabet[Int(n & 63)]
                    i += 3
                    o += 4
                }
                if bytes.count - i >= 1 {
                    let n = UInt32(bytes[i]) << 16 | (bytes.count - i == 2 ? UInt32(bytes[i + 1]) << 8 : 0)
                    out[o] = alphabet[Int(n >> 18)]
                    out[o + 1] = alphabet[Int((n >> 12) & 63)]
                    o += 2
                    if bytes.count - i == 2 {
                        out[o] = alphabet[Int((n >> 6) & 63)]
                        o += 1
                    }
                }
                return o
            }
        }
    }

    /// Strict decoding: no padding, no other characters, and unused trailing bits must be zero, so
    /// every byte string has exactly one accepted spelling.
    public static func decode(_ text: String) -> [UInt8]? {
        let chars = Array(text.utf8)
        if chars.count % 4 == 1 { return nil }
        var out = [UInt8]()
        var acc: UInt32 = 0
        var bits = 0
        for c in chars {
            let v = reverse[Int(c)]
            if v < 0 { return nil }
            acc = acc << 6 | UInt32(v)
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8((acc >> UInt32(bits)) & 0xFF))
            }
        }
        if bits > 0 && acc & ((1 << UInt32(bits)) - 1) != 0 { return nil }
        return out
    }
}
