// Turning raw parsed JSON into the tree form.

extension JSONValue {
    /// The tree form of this value, as if written at the root. Tree values must
    /// have one representation only, so: arrays become objects keyed "0",
    /// "1", ... (null elements dropped), null members are removed, empty
    /// objects become `.null`, every key is taken in NFC (`Key.canonical`) and
    /// validated, and nesting is limited to 32 levels.
    public func normalized() throws(TreeError) -> JSONValue {
        try normalized(at: .root)
    }

    /// The tree form of this value when written at `base`: the path limits
    /// (32 levels, 768 bytes) then apply to the full path of every member.
    /// Limits are checked for every member present, null ones included.
    public func normalized(at base: Path) throws(TreeError) -> JSONValue {
        try Self.normalize(self, depth: base.depth, byteLength: base.byteLength)
    }

    private static func normalize(_ value: JSONValue, depth: Int, byteLength: Int) throws(TreeError) -> JSONValue {
        switch value {
        case .null, .bool, .string:
            return value
        case .number(let number):
            guard number.isFinite else { throw .nonFiniteNumber }
            return value
        case .array(let items):
            var members: [String: JSONValue] = [:]
            for (index, item) in items.enumerated() {
                let key = String(index)
                let child = try normalizeChild(key: key, item, depth: depth, byteLength: byteLength)
                if !child.isNull { members[key] = child }
            }
            return members.isEmpty ? .null : .object(members)
        case .object(let source):
            var members: [String: JSONValue] = [:]
            for (key, item) in source {
                // `Key` alone is the dictionary-literal alias here. Two keys of one dictionary are
                // never canonically equivalent (`String` equality), so their NFC forms differ too.
                let key = try Tree.Key.canonical(key)
                let child = try normalizeChild(key: key, item, depth: depth, byteLength: byteLength)
                if !child.isNull { members[key] = child }
            }
            return members.isEmpty ? .null : .object(members)
        }
    }

    private static func normalizeChild(key: String, _ item: JSONValue, depth: Int, byteLength: Int) throws(TreeError) -> JSONValue {
        let childDepth = depth + 1
        let childLength = depth == 0 ? key.utf8.count : byteLength + 1 + key.utf8.count
        try Path.checkLimits(depth: childDepth, byteLength: childLength)
        return try normalize(item, depth: childDepth, byteLength: childLength)
    }
}

extension JSONValue {
    /// This value with every object key in NFC (`CanonicalText`), everything else as it is; the
    /// value itself when its keys are NFC already (the usual case, found without copying).
    /// Normalized values (`normalized()`) have NFC keys already; this is for values built by
    /// hand, so that a record never spells a key two ways.
    public func withCanonicalKeys() -> JSONValue {
        hasNonCanonicalKey ? canonicalizingKeys() : self
    }

    private var hasNonCanonicalKey: Bool {
        switch self {
        case .object(let members): return members.contains { key, member in !CanonicalText.isNFC(key) || member.hasNonCanonicalKey }
        case .array(let items): return items.contains { $0.hasNonCanonicalKey }
        default: return false
        }
    }

    private func canonicalizingKeys() -> JSONValue {
        switch self {
        case .object(let members):
            var canonical = [String: JSONValue](minimumCapacity: members.count)
            for (key, member) in members { canonical[CanonicalText.nfc(key)] = member.canonicalizingKeys() }
            return .object(canonical)
        case .array(let items):
            return .array(items.map { $0.canonicalizingKeys() })
        default:
            return self
        }
    }
}
