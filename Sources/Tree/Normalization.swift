// Turning raw parsed JSON into the tree form.

extension JSONValue {
    /// The tree form of this value, as if written at the root. Tree values must
    /// have one representation only, so: arrays become objects keyed "0",
    /// "1", ... (null elements dropped), null members are removed, empty
    /// objects become `.null`, every key is validated and nesting is limited
    /// to 32 levels.
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
                try Tree.Key.validate(key)  // `Key` alone is the dictionary-literal alias here
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
