/// One SQLite value, as stored in a column or bound to a parameter.
///
/// Why an enum: SQLite is dynamically typed per value (https://sqlite.org/datatype3.html),
/// so a value read back may have any of the five storage classes. Callers switch on it,
/// or use the optional accessors below when they expect one class.
public enum SQLValue: Hashable, Sendable {
    /// SQL NULL.
    case null
    /// A 64-bit signed integer (storage class INTEGER).
    case integer(Int64)
    /// An IEEE 754 double (storage class REAL).
    case real(Double)
    /// UTF-8 text (storage class TEXT). May contain embedded NULs; they are preserved.
    case text(String)
    /// Raw bytes (storage class BLOB). An empty array round-trips as an empty blob, not NULL.
    case blob([UInt8])
}

extension SQLValue {
    /// Wraps a Swift `Int`, because most callers count in `Int`, not `Int64`.
    public init(_ value: Int) { self = .integer(Int64(value)) }

    /// Stores a Bool as 0/1, the SQLite convention (SQLite has no boolean type).
    public init(_ value: Bool) { self = .integer(value ? 1 : 0) }

    /// True for `.null`, so callers can test for NULL without pattern matching.
    public var isNull: Bool {
        if case .null = self { return true }
        return false
    }

    /// The integer payload, or nil when this is not `.integer`. No coercion, so a
    /// wrongly typed column is noticed instead of silently read as 0.
    public var int64Value: Int64? {
        if case .integer(let v) = self { return v }
        return nil
    }

    /// The integer payload as `Int`, or nil when this is not `.integer`.
    public var intValue: Int? { int64Value.map { Int($0) } }

    /// The integer payload as Bool (non-zero is true), or nil when this is not `.integer`.
    public var boolValue: Bool? { int64Value.map { $0 != 0 } }

    /// The real payload; an `.integer` is widened too, since SQLite itself stores
    /// integral REAL values as integers on disk (https://sqlite.org/datatype3.html).
    public var doubleValue: Double? {
        switch self {
        case .real(let v): return v
        case .integer(let v): return Double(v)
        default: return nil
        }
    }

    /// The text payload, or nil when this is not `.text`.
    public var textValue: String? {
        if case .text(let v) = self { return v }
        return nil
    }

    /// The blob payload, or nil when this is not `.blob`.
    public var blobValue: [UInt8]? {
        if case .blob(let v) = self { return v }
        return nil
    }
}

/// Literals make parameter lists short: `db.run("... VALUES (?, ?, ?)", [1, "x", nil])`.
extension SQLValue: ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral,
    ExpressibleByStringLiteral, ExpressibleByNilLiteral, ExpressibleByBooleanLiteral
{
    /// Integer literal → `.integer`.
    public init(integerLiteral value: Int64) { self = .integer(value) }
    /// Float literal → `.real`.
    public init(floatLiteral value: Double) { self = .real(value) }
    /// String literal → `.text`.
    public init(stringLiteral value: String) { self = .text(value) }
    /// `nil` → `.null`.
    public init(nilLiteral: ()) { self = .null }
    /// Bool literal → `.integer(0/1)`.
    public init(booleanLiteral value: Bool) { self.init(value) }
}

extension SQLValue: CustomStringConvertible {
    /// A short, SQL-like rendering for logs and test failures (blobs shown as hex).
    public var description: String {
        switch self {
        case .null: return "NULL"
        case .integer(let v): return String(v)
        case .real(let v): return String(v)
        case .text(let v):
            var quoted = "'"
            for ch in v { quoted += ch == "'" ? "''" : String(ch) }
            return quoted + "'"
        case .blob(let v):
            let digits = Array("0123456789ABCDEF")
            var hex = "x'"
            for byte in v {
                hex.append(digits[Int(byte >> 4)])
                hex.append(digits[Int(byte & 0xF)])
            }
            return hex + "'"
        }
    }
}
