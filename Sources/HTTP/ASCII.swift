// Byte classes from RFC 9110/9112, so the parser reads like the grammar.

enum ASCII {
    static let cr: UInt8 = 0x0D
    static let lf: UInt8 = 0x0A
    static let space: UInt8 = 0x20
    static let tab: UInt8 = 0x09
    static let colon = UInt8(ascii: ":")
    static let semicolon = UInt8(ascii: ";")
    static let comma = UInt8(ascii: ",")
    static let slash = UInt8(ascii: "/")
    static let question = UInt8(ascii: "?")
    static let percent = UInt8(ascii: "%")
    static let ampersand = UInt8(ascii: "&")
    static let equals = UInt8(ascii: "=")
    static let hash = UInt8(ascii: "#")

    /// `tchar`: the characters of methods, header names and transfer codings.
    static func isTokenChar(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
             UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"),
             UInt8(ascii: "&"), UInt8(ascii: "'"), UInt8(ascii: "*"), UInt8(ascii: "+"),
             UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "^"), UInt8(ascii: "_"),
             UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"):
            return true
        default:
            return false
        }
    }

    /// Visible ASCII (`VCHAR`), the only bytes a request target may contain.
    static func isVisible(_ byte: UInt8) -> Bool { byte >= 0x21 && byte <= 0x7E }

    /// Bytes allowed inside a header value: visible ASCII, obs-text, space and tab; never a
    /// control byte (NUL, a bare CR or LF would let a value smuggle another line).
    static func isFieldValueByte(_ byte: UInt8) -> Bool {
        byte == space || byte == tab || (byte >= 0x21 && byte != 0x7F)
    }

    /// Optional whitespace (`OWS`).
    static func isWhitespace(_ byte: UInt8) -> Bool { byte == space || byte == tab }

    /// The value of a hex digit, or nil.
    static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }

    /// ASCII-only lowercasing: header names and codings are case-insensitive in ASCII only, and
    /// Unicode case folding must not make two different names equal.
    static func lowercased(_ text: some StringProtocol) -> String {
        String(decoding: text.utf8.map { $0 >= 0x41 && $0 <= 0x5A ? $0 + 0x20 : $0 }, as: UTF8.self)
    }

    /// Whether two names are equal ignoring ASCII case.
    static func equalsIgnoringCase(_ a: some StringProtocol, _ b: some StringProtocol) -> Bool {
        a.utf8.elementsEqual(b.utf8) { x, y in
            (x >= 0x41 && x <= 0x5A ? x + 0x20 : x) == (y >= 0x41 && y <= 0x5A ? y + 0x20 : y)
        }
    }
}
