/// Why a record was refused. Each case is a distinct reason that `lanchat import` and peers report.
public enum RecordError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The bytes are not deterministic CBOR (truncated, trailing bytes, non-canonical, ...).
    case malformed(CBORError)
    /// The encoding is larger than `RecordLimits.maxRecordBytes`.
    case tooLarge(size: Int, limit: Int)
    /// The top-level shape is wrong: not a 6-item array, or a field of the wrong type or size.
    case invalidField(String)
    /// A version this node does not understand.
    case unsupportedVersion(UInt64)
    /// A kind this node does not understand.
    case unknownKind(UInt64)
    /// A write body broke a rule: no pairs, too many, paths unordered or overlapping.
    case invalidBody(String)
    /// A path in a write was not a valid Firebase path.
    case invalidPath(String)
    /// A value in a write was not a canonical tree value.
    case invalidValue(path: String, reason: String)
    /// The Ed25519 signature does not match the author and the content.
    case badSignature

    public var description: String {
        switch self {
        case let .malformed(e): return "malformed record: \(e)"
        case let .tooLarge(size, limit): return "record of \(size) bytes exceeds the limit of \(limit) bytes"
        case let .invalidField(what): return "invalid record field: \(what)"
        case let .unsupportedVersion(v): return "unsupported record version \(v)"
        case let .unknownKind(k): return "unknown record kind \(k)"
        case let .invalidBody(why): return "invalid write body: \(why)"
        case let .invalidPath(why): return "invalid path in record: \(why)"
        case let .invalidValue(path, why): return "invalid value at \(path): \(why)"
        case .badSignature: return "bad signature"
        }
    }
}
