/// Why a byte sequence was rejected as JSON.
///
/// Every case carries the byte offset (0-based) where the problem was found so
/// that a peer or a user can be told exactly what was wrong with their input.
public enum JSONError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The whole input is bigger than `JSONLimits.maxBytes`.
    case inputTooLarge(byteCount: Int, limit: Int)
    /// The input ended while something (named in `expected`) was still required.
    case unexpectedEnd(offset: Int, expected: String)
    /// A byte appeared where something else (named in `expected`) was required.
    case unexpectedByte(offset: Int, expected: String)
    /// A complete value was followed by more non-whitespace bytes.
    case trailingData(offset: Int)
    /// Arrays/objects are nested deeper than `JSONLimits.maxDepth`.
    case tooDeep(offset: Int, limit: Int)
    /// A decoded string is longer than `JSONLimits.maxStringBytes`.
    case stringTooLong(offset: Int, limit: Int)
    /// A string contains bytes that are not well-formed UTF-8.
    case invalidUTF8(offset: Int)
    /// A backslash escape is not one of the escapes JSON defines.
    case invalidEscape(offset: Int)
    /// A `\u` escape names half of a surrogate pair without the other half.
    case loneSurrogate(offset: Int)
    /// A raw control character (U+0000 to U+001F) appears inside a string.
    case controlCharacterInString(offset: Int)
    /// A number has a superfluous leading zero, such as `01`.
    case leadingZero(offset: Int)
    /// A number is too large to be represented as a finite double.
    case numberOutOfRange(offset: Int)
    /// An object names the same key twice.
    case duplicateKey(offset: Int, key: String)

    /// Where in the input the problem was found.
    public var offset: Int {
        switch self {
        case .inputTooLarge(_, let limit): return limit
        case .unexpectedEnd(let offset, _), .unexpectedByte(let offset, _),
             .tooDeep(let offset, _), .stringTooLong(let offset, _),
             .duplicateKey(let offset, _):
            return offset
        case .trailingData(let offset), .invalidUTF8(let offset), .invalidEscape(let offset),
             .loneSurrogate(let offset), .controlCharacterInString(let offset),
             .leadingZero(let offset), .numberOutOfRange(let offset):
            return offset
        }
    }

    /// A human sentence such as "invalid JSON at byte 12: expected ',' or '}'".
    public var description: String {
        let detail: String
        switch self {
        case .inputTooLarge(let count, let limit):
            detail = "document of \(count) bytes exceeds the limit of \(limit) bytes"
        case .unexpectedEnd(_, let expected):
            detail = "unexpected end of input, expected \(expected)"
        case .unexpectedByte(_, let expected):
            detail = "expected \(expected)"
        case .trailingData:
            detail = "unexpected data after the end of the document"
        case .tooDeep(_, let limit):
            detail = "nesting deeper than \(limit) levels"
        case .stringTooLong(_, let limit):
            detail = "string longer than \(limit) bytes"
        case .invalidUTF8:
            detail = "invalid UTF-8"
        case .invalidEscape:
            detail = "invalid escape sequence"
        case .loneSurrogate:
            detail = "unpaired UTF-16 surrogate in \\u escape"
        case .controlCharacterInString:
            detail = "unescaped control character in string"
        case .leadingZero:
            detail = "number with a leading zero"
        case .numberOutOfRange:
            detail = "number out of the range of a double"
        case .duplicateKey(_, let key):
            detail = "duplicate key \"\(key)\""
        }
        return "invalid JSON at byte \(offset): \(detail)"
    }
}
