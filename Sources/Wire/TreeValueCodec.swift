import Tree

/// Converts tree values (normalized `JSONValue`s) to and from CBOR. Numbers are IEEE doubles as in
/// Firebase; an integral double of magnitude at most 2^53 is written as a CBOR integer and any
/// other as the shortest exact float, so every number has one encoding.
public enum TreeValueCodec {
    /// Largest integer magnitude that a double holds exactly.
    static let maxExactInteger: Double = 9_007_199_254_740_992  // 2^53

    /// The CBOR form of a normalized tree value.
    public static func encode(_ value: JSONValue) -> CBOR {
        switch value {
        case .null: return .null
        case let .bool(b): return .bool(b)
        case let .number(d):
            if d == d.rounded(), abs(d) <= maxExactInteger {
                return d < 0 ? .negative(UInt64(-d) - 1) : .unsigned(UInt64(d))
            }
            return .float(d)
        case let .string(s): return .text(s)
        case let .array(items):
            // Tree values never hold arrays; encode as Firebase stores them, for robustness.
            var pairs = [CBORPair]()
            for (i, item) in items.enumerated() where item != .null {
                pairs.append(CBORPair(.text(String(i)), encode(item)))
            }
            return pairs.isEmpty ? .null : .map(pairs)
        case let .object(members):
            return .map(members.map { CBORPair(.text($0.key), encode($0.value)) })
        }
    }

    /// Reads a tree value written at `path`, refusing anything that `encode` would not produce
    /// from a normalized value: non-text or invalid keys, empty maps, null members, arrays, byte
    /// strings, integers beyond 2^53, floats that should have been integers, and leaf paths
    /// beyond Firebase's depth and length limits. Object keys are taken in NFC (Protocol.md
    /// §5.1): the value is the tree's reading of the bytes, which may spell a key otherwise.
    public static func decode(_ item: CBOR, at path: Path) throws(RecordError) -> JSONValue {
        var respelled = false
        return try decode(item, at: path, allowNull: true, respelled: &respelled)
    }

    /// `decode(item, at: path)`, also telling whether any object key was spelled otherwise than
    /// in NFC (then the value no longer encodes to the bytes it was read from).
    static func decode(_ item: CBOR, at path: Path, respelled: inout Bool) throws(RecordError) -> JSONValue {
        try decode(item, at: path, allowNull: true, respelled: &respelled)
    }

    private static func decode(_ item: CBOR, at path: Path, allowNull: Bool, respelled: inout Bool) throws(RecordError) -> JSONValue {
        guard case let .map(pairs) = item else { return try leaf(item, allowNull: allowNull) { path.description } }
        guard !pairs.isEmpty else { throw .invalidValue(path: path.description, reason: "empty object") }
        var members = [String: JSONValue](minimumCapacity: pairs.count)
        for pair in pairs {
            guard case let .text(written) = pair.key else {
                throw .invalidValue(path: path.description, reason: "object key is not text")
            }
            let key: String
            do { key = try memberKey(written, below: path, respelled: &respelled) } catch {
                throw .invalidValue(path: path.description, reason: "\(error)")
            }
            let value: JSONValue
            if case .map = pair.value {
                value = try decode(pair.value, at: try! path.appending(key), allowNull: false, respelled: &respelled)  // checked above
            } else {
                // Most members are leaves: their path is checked, and built only to name it in an error.
                value = try leaf(pair.value, allowNull: false) { (try? path.appending(key))?.description ?? path.description }
            }
            // Keys that differ in bytes but are canonically equivalent are one key to a tree
            // object: accepting both would silently drop one of the signed values.
            guard members.updateValue(value, forKey: key) == nil else {
                throw .invalidValue(path: (try? path.appending(key))?.description ?? path.description,
                                    reason: "two keys are canonically equivalent")
            }
        }
        return .object(members)
    }

    /// An object member's key as the tree holds it: valid below `path` and in NFC. `respelled`
    /// is set when the written bytes spell it otherwise (the value then no longer encodes to
    /// the bytes it was read from).
    static func memberKey(_ written: String, below path: Path, respelled: inout Bool) throws(TreeError) -> String {
        let key = try path.canonicalChildKey(written)
        if !respelled, !CanonicalText.isASCII(written), !key.utf8.elementsEqual(written.utf8) { respelled = true }
        return key
    }

    /// The number an unsigned CBOR integer stands for; nil beyond 2^53, where a JSON number
    /// (a double) no longer holds every integer exactly.
    static func number(unsigned n: UInt64) -> JSONValue? { n <= 1 << 53 ? .number(Double(n)) : nil }

    /// The number a negative CBOR integer (-1 - n) stands for; nil beyond -2^53.
    static func number(negative n: UInt64) -> JSONValue? { n < 1 << 53 ? .number(-Double(n) - 1) : nil }

    /// Reads anything but a map; `path` names where it was written, for errors only.
    private static func leaf(_ item: CBOR, allowNull: Bool, path: () -> String) throws(RecordError) -> JSONValue {
        switch item {
        case .null:
            guard allowNull else { throw .invalidValue(path: path(), reason: "null member inside an object") }
            return .null
        case let .bool(b): return .bool(b)
        case let .unsigned(n):
            guard let number = number(unsigned: n) else { throw .invalidValue(path: path(), reason: "integer beyond 2^53") }
            return number
        case let .negative(n):
            guard let number = number(negative: n) else { throw .invalidValue(path: path(), reason: "integer beyond -2^53") }
            return number
        case let .float(d):
            if d == d.rounded(), abs(d) <= maxExactInteger {
                throw .invalidValue(path: path(), reason: "integral number \(d) must be a CBOR integer")
            }
            return .number(d)
        case let .text(s): return .string(s)
        case .array: throw .invalidValue(path: path(), reason: "arrays are stored as objects")
        case .bytes: throw .invalidValue(path: path(), reason: "byte strings are not tree values")
        case .map: preconditionFailure("maps are decoded by decode(_:at:allowNull:)")
        }
    }
}
