// A strict RFC 8259 parser written over raw UTF-8 bytes.
//
// Input comes from untrusted peers, so the parser validates everything
// (UTF-8, escapes, number grammar, duplicate keys), never traps on input data,
// and recurses at most `JSONLimits.maxDepth` levels.

extension JSONValue {
    /// Parses one JSON document from UTF-8 bytes, rejecting anything RFC 8259
    /// does not allow (plus duplicate keys and numbers that overflow a double),
    /// because malformed peer input must never reach the tree.
    public static func parse(_ bytes: some Collection<UInt8>, limits: JSONLimits = .default) throws(JSONError) -> JSONValue {
        let count = bytes.count
        guard count <= limits.maxBytes else {
            throw .inputTooLarge(byteCount: count, limit: limits.maxBytes)
        }
        var parser = JSONParser(bytes: Array(bytes), limits: limits)
        return try parser.parseDocument()
    }

    /// Parses one JSON document from text; the same rules as the byte form.
    public static func parse(_ text: String, limits: JSONLimits = .default) throws(JSONError) -> JSONValue {
        try parse(Array(text.utf8), limits: limits)
    }
}

/// Byte constants, so the parser reads like the grammar.
private enum Byte {
    static let quote = UInt8(ascii: "\"")
    static let backslash = UInt8(ascii: "\\")
    static let slash = UInt8(ascii: "/")
    static let openBrace = UInt8(ascii: "{")
    static let closeBrace = UInt8(ascii: "}")
    static let openBracket = UInt8(ascii: "[")
    static let closeBracket = UInt8(ascii: "]")
    static let comma = UInt8(ascii: ",")
    static let colon = UInt8(ascii: ":")
    static let minus = UInt8(ascii: "-")
    static let plus = UInt8(ascii: "+")
    static let dot = UInt8(ascii: ".")
    static let zero = UInt8(ascii: "0")
    static let nine = UInt8(ascii: "9")
    static let lowerE = UInt8(ascii: "e")
    static let upperE = UInt8(ascii: "E")
    static let lowerU = UInt8(ascii: "u")
}

/// The parser state: the input and a cursor into it.
struct JSONParser {
    private let bytes: [UInt8]
    private let limits: JSONLimits
    private var index = 0

    /// Prepares to parse `bytes` under `limits`.
    init(bytes: [UInt8], limits: JSONLimits) {
        self.bytes = bytes
        self.limits = limits
    }

    /// Parses exactly one value surrounded by optional whitespace.
    mutating func parseDocument() throws(JSONError) -> JSONValue {
        skipWhitespace()
        let value = try parseValue(depth: 0)
        skipWhitespace()
        guard index == bytes.count else { throw .trailingData(offset: index) }
        return value
    }

    // MARK: - Helpers

    private var current: UInt8? { index < bytes.count ? bytes[index] : nil }

    private static func isDigit(_ byte: UInt8) -> Bool { byte >= Byte.zero && byte <= Byte.nine }

    private mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    /// Consumes `byte` or throws naming `expected`.
    private mutating func expect(_ byte: UInt8, _ expected: String) throws(JSONError) {
        guard let found = current else { throw .unexpectedEnd(offset: index, expected: expected) }
        guard found == byte else { throw .unexpectedByte(offset: index, expected: expected) }
        index += 1
    }

    // MARK: - Values

    private mutating func parseValue(depth: Int) throws(JSONError) -> JSONValue {
        guard let byte = current else { throw .unexpectedEnd(offset: index, expected: "a value") }
        switch byte {
        case Byte.openBrace: return try parseObject(depth: depth + 1)
        case Byte.openBracket: return try parseArray(depth: depth + 1)
        case Byte.quote: return .string(try parseString())
        case UInt8(ascii: "t"): try parseLiteral("true"); return .bool(true)
        case UInt8(ascii: "f"): try parseLiteral("false"); return .bool(false)
        case UInt8(ascii: "n"): try parseLiteral("null"); return .null
        case Byte.minus, Byte.zero...Byte.nine: return .number(try parseNumber())
        default: throw .unexpectedByte(offset: index, expected: "a value")
        }
    }

    private mutating func parseLiteral(_ word: StaticString) throws(JSONError) {
        let expected = "'\(word)'"
        let start = word.utf8Start
        for offset in 0..<word.utf8CodeUnitCount {
            try expect(start[offset], expected)
        }
    }

    private mutating func parseObject(depth: Int) throws(JSONError) -> JSONValue {
        guard depth <= limits.maxDepth else { throw .tooDeep(offset: index, limit: limits.maxDepth) }
        index += 1 // '{'
        var members: [String: JSONValue] = [:]
        skipWhitespace()
        if current == Byte.closeBrace {
            index += 1
            return .object(members)
        }
        while true {
            skipWhitespace()
            let keyOffset = index
            guard let byte = current else { throw .unexpectedEnd(offset: index, expected: "a string key") }
            guard byte == Byte.quote else { throw .unexpectedByte(offset: index, expected: "a string key") }
            let key = try parseString()
            guard members[key] == nil else { throw .duplicateKey(offset: keyOffset, key: key) }
            skipWhitespace()
            try expect(Byte.colon, "':'")
            skipWhitespace()
            members[key] = try parseValue(depth: depth)
            skipWhitespace()
            guard let separator = current else { throw .unexpectedEnd(offset: index, expected: "',' or '}'") }
            switch separator {
            case Byte.comma: index += 1
            case Byte.closeBrace: index += 1; return .object(members)
            default: throw .unexpectedByte(offset: index, expected: "',' or '}'")
            }
        }
    }

    private mutating func parseArray(depth: Int) throws(JSONError) -> JSONValue {
        guard depth <= limits.maxDepth else { throw .tooDeep(offset: index, limit: limits.maxDepth) }
        index += 1 // '['
        var items: [JSONValue] = []
        skipWhitespace()
        if current == Byte.closeBracket {
            index += 1
            return .array(items)
        }
        while true {
            skipWhitespace()
            items.append(try parseValue(depth: depth))
            skipWhitespace()
            guard let separator = current else { throw .unexpectedEnd(offset: index, expected: "',' or ']'") }
            switch separator {
            case Byte.comma: index += 1
            case Byte.closeBracket: index += 1; return .array(items)
            default: throw .unexpectedByte(offset: index, expected: "',' or ']'")
            }
        }
    }

    // MARK: - Numbers

    private mutating func parseNumber() throws(JSONError) -> Double {
        let start = index
        if current == Byte.minus { index += 1 }
        guard let first = current else { throw .unexpectedEnd(offset: index, expected: "a digit") }
        if first == Byte.zero {
            index += 1
            if let next = current, Self.isDigit(next) { throw .leadingZero(offset: start) }
        } else if Self.isDigit(first) {
            skipDigits()
        } else {
            throw .unexpectedByte(offset: index, expected: "a digit")
        }
        if current == Byte.dot {
            index += 1
            try requireDigits()
        }
        if current == Byte.lowerE || current == Byte.upperE {
            index += 1
            if current == Byte.plus || current == Byte.minus { index += 1 }
            try requireDigits()
        }
        let text = String(decoding: bytes[start..<index], as: UTF8.self)
        guard let value = Double(text), value.isFinite else { throw .numberOutOfRange(offset: start) }
        return value
    }

    private mutating func skipDigits() {
        while let byte = current, Self.isDigit(byte) { index += 1 }
    }

    private mutating func requireDigits() throws(JSONError) {
        guard let byte = current else { throw .unexpectedEnd(offset: index, expected: "a digit") }
        guard Self.isDigit(byte) else { throw .unexpectedByte(offset: index, expected: "a digit") }
        skipDigits()
    }

    // MARK: - Strings

    private mutating func parseString() throws(JSONError) -> String {
        let start = index
        index += 1 // opening quote
        var out: [UInt8] = []
        while true {
            // Copy a run of plain ASCII in one go.
            var runEnd = index
            while runEnd < bytes.count {
                let byte = bytes[runEnd]
                if byte < 0x20 || byte >= 0x80 || byte == Byte.quote || byte == Byte.backslash { break }
                runEnd += 1
            }
            if runEnd > index {
                out.append(contentsOf: bytes[index..<runEnd])
                index = runEnd
            }
            guard out.count <= limits.maxStringBytes else {
                throw .stringTooLong(offset: start, limit: limits.maxStringBytes)
            }
            guard let byte = current else { throw .unexpectedEnd(offset: index, expected: "'\"'") }
            switch byte {
            case Byte.quote:
                index += 1
                return String(decoding: out, as: UTF8.self)
            case Byte.backslash:
                try parseEscape(into: &out)
            case 0..<0x20:
                throw .controlCharacterInString(offset: index)
            default:
                try copyMultiByteSequence(into: &out)
            }
            guard out.count <= limits.maxStringBytes else {
                throw .stringTooLong(offset: start, limit: limits.maxStringBytes)
            }
        }
    }

    /// The length of a multi-byte UTF-8 sequence that starts with `lead`, and the range its
    /// second byte must lie in (which rules out overlong forms, encoded surrogates and code
    /// points above U+10FFFF); nil when `lead` starts none. Also for `JSONStreamReader`.
    static func utf8Sequence(lead: UInt8) -> (length: Int, low: UInt8, high: UInt8)? {
        switch lead {
        case 0xC2...0xDF: return (2, 0x80, 0xBF)
        case 0xE0: return (3, 0xA0, 0xBF)
        case 0xE1...0xEC, 0xEE...0xEF: return (3, 0x80, 0xBF)
        case 0xED: return (3, 0x80, 0x9F)
        case 0xF0: return (4, 0x90, 0xBF)
        case 0xF1...0xF3: return (4, 0x80, 0xBF)
        case 0xF4: return (4, 0x80, 0x8F)
        default: return nil
        }
    }

    /// Validates one multi-byte UTF-8 sequence (rejecting overlong forms,
    /// encoded surrogates and code points above U+10FFFF) and copies it.
    private mutating func copyMultiByteSequence(into out: inout [UInt8]) throws(JSONError) {
        let start = index
        let lead = bytes[start]
        guard let (length, low, high) = Self.utf8Sequence(lead: lead) else { throw .invalidUTF8(offset: start) }
        guard bytes.count - start >= length else { throw .invalidUTF8(offset: start) }
        for position in 1..<length {
            let byte = bytes[start + position]
            let range: ClosedRange<UInt8> = position == 1 ? low...high : 0x80...0xBF
            guard range.contains(byte) else { throw .invalidUTF8(offset: start) }
        }
        out.append(contentsOf: bytes[start..<(start + length)])
        index = start + length
    }

    private mutating func parseEscape(into out: inout [UInt8]) throws(JSONError) {
        let start = index // the backslash
        index += 1
        guard let escaped = current else { throw .unexpectedEnd(offset: index, expected: "an escape character") }
        index += 1
        switch escaped {
        case Byte.quote: out.append(Byte.quote)
        case Byte.backslash: out.append(Byte.backslash)
        case Byte.slash: out.append(Byte.slash)
        case UInt8(ascii: "b"): out.append(0x08)
        case UInt8(ascii: "f"): out.append(0x0C)
        case UInt8(ascii: "n"): out.append(0x0A)
        case UInt8(ascii: "r"): out.append(0x0D)
        case UInt8(ascii: "t"): out.append(0x09)
        case Byte.lowerU:
            let unit = try parseHex4()
            switch unit {
            case 0xD800...0xDBFF:
                guard bytes.count - index >= 2, bytes[index] == Byte.backslash, bytes[index + 1] == Byte.lowerU else {
                    throw .loneSurrogate(offset: start)
                }
                index += 2
                let trail = try parseHex4()
                guard (0xDC00...0xDFFF).contains(trail) else { throw .loneSurrogate(offset: start) }
                Self.appendUTF8(0x10000 + ((unit - 0xD800) << 10) + (trail - 0xDC00), to: &out)
            case 0xDC00...0xDFFF:
                throw .loneSurrogate(offset: start)
            default:
                Self.appendUTF8(unit, to: &out)
            }
        default:
            throw .invalidEscape(offset: start)
        }
    }

    /// Reads the four hex digits of a `\u` escape.
    private mutating func parseHex4() throws(JSONError) -> UInt32 {
        var value: UInt32 = 0
        for _ in 0..<4 {
            guard let byte = current else { throw .unexpectedEnd(offset: index, expected: "a hex digit") }
            let digit: UInt8
            switch byte {
            case Byte.zero...Byte.nine: digit = byte - Byte.zero
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw .invalidEscape(offset: index)
            }
            value = value << 4 | UInt32(digit)
            index += 1
        }
        return value
    }

    /// Encodes a Unicode scalar value (never a surrogate) as UTF-8 (also for `JSONStreamReader`).
    static func appendUTF8(_ scalar: UInt32, to out: inout [UInt8]) {
        switch scalar {
        case 0..<0x80:
            out.append(UInt8(scalar))
        case 0x80..<0x800:
            out.append(UInt8(0xC0 | (scalar >> 6)))
            out.append(UInt8(0x80 | (scalar & 0x3F)))
        case 0x800..<0x10000:
            out.append(UInt8(0xE0 | (scalar >> 12)))
            out.append(UInt8(0x80 | ((scalar >> 6) & 0x3F)))
            out.append(UInt8(0x80 | (scalar & 0x3F)))
        default:
            out.append(UInt8(0xF0 | ((scalar >> 18) & 0x07)))
            out.append(UInt8(0x80 | ((scalar >> 12) & 0x3F)))
            out.append(UInt8(0x80 | ((scalar >> 6) & 0x3F)))
            out.append(UInt8(0x80 | (scalar & 0x3F)))
        }
    }
}
