/// A JSON document, or one node of the shared tree.
///
/// A single type serves both raw parsed input and stored tree values so that
/// data flows from the wire parser into the tree without a second model.
/// `normalized()` is the gate between the two forms: tree values never hold
/// `.array`, never hold null members and never hold empty objects.
public enum JSONValue: Hashable, Sendable {
    /// JSON `null`; in the tree it means "nothing here".
    case null
    /// JSON `true` / `false`.
    case bool(Bool)
    /// Every JSON number, as Firebase stores them: an IEEE double.
    case number(Double)
    /// A JSON string (any Unicode text).
    case string(String)
    /// A JSON array; only ever present in raw parsed input, because the tree
    /// stores arrays as objects keyed "0", "1", ...
    case array([JSONValue])
    /// A JSON object. Keys are compared with Swift `String` equality, so two
    /// canonically equivalent spellings count as the same key; tree values
    /// (`normalized()`, decoded records) hold every key in NFC, the spelling
    /// paths and the store use.
    case object([String: JSONValue])
}

extension JSONValue {
    /// Whether this is `.null`; handy because null means "absent" in the tree.
    public var isNull: Bool {
        if case .null = self { return true }
        return false
    }

    /// The members when this is an object, so callers need not pattern-match.
    public var objectValue: [String: JSONValue]? {
        if case .object(let members) = self { return members }
        return nil
    }

    /// The number when this is a number; used by increments and counters.
    public var numberValue: Double? {
        if case .number(let number) = self { return number }
        return nil
    }

    /// The text when this is a string.
    public var stringValue: String? {
        if case .string(let text) = self { return text }
        return nil
    }

    /// The flag when this is a boolean.
    public var boolValue: Bool? {
        if case .bool(let flag) = self { return flag }
        return nil
    }
}

extension JSONValue: CustomStringConvertible {
    /// Compact JSON, so that values read well in logs and test failures.
    public var description: String { serialized() }
}
