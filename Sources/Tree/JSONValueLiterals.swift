// Literal conformances: they let tests and callers write tree values the way
// they would write JSON, e.g. `let v: JSONValue = ["a": 1, "b": [true, nil]]`.

extension JSONValue: ExpressibleByNilLiteral {
    /// `nil` spells JSON null.
    public init(nilLiteral: ()) { self = .null }
}

extension JSONValue: ExpressibleByBooleanLiteral {
    /// `true` / `false` spell JSON booleans.
    public init(booleanLiteral value: Bool) { self = .bool(value) }
}

extension JSONValue: ExpressibleByIntegerLiteral {
    /// Integer literals become numbers, as all JSON numbers are doubles here.
    public init(integerLiteral value: Int) { self = .number(Double(value)) }
}

extension JSONValue: ExpressibleByFloatLiteral {
    /// Floating-point literals become numbers.
    public init(floatLiteral value: Double) { self = .number(value) }
}

extension JSONValue: ExpressibleByStringLiteral {
    /// String literals become JSON strings.
    public init(stringLiteral value: String) { self = .string(value) }
}

extension JSONValue: ExpressibleByArrayLiteral {
    /// Array literals become raw `.array` values (normalize them for the tree).
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
}

extension JSONValue: ExpressibleByDictionaryLiteral {
    /// Dictionary literals become objects; a repeated key keeps its last value
    /// instead of trapping.
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        var members: [String: JSONValue] = [:]
        for (key, value) in elements { members[key] = value }
        self = .object(members)
    }
}
