// Firebase read/write semantics on in-memory tree values. Other modules use
// these as the reference model of the database, so they follow the rules
// literally: null means absent, and empty objects never survive.

extension JSONValue {
    /// The value at `path`, or `.null` when nothing is there (including any
    /// path that passes through a primitive).
    public func value(at path: Path) -> JSONValue {
        var node = self
        for key in path.segments {
            guard case .object(let members) = node, let child = members[key] else { return .null }
            node = child
        }
        return node
    }

    /// This tree with the subtree at `path` replaced by `value` (which must
    /// already be normalized; `.null` deletes). Writing a non-null value below
    /// a primitive turns that primitive into an object; writing null below a
    /// primitive or below nothing changes nothing; objects emptied by a
    /// deletion vanish all the way up.
    public func setting(_ path: Path, to value: JSONValue) -> JSONValue {
        // Tolerate an empty object, which would otherwise break the invariant.
        let replacement: JSONValue
        if case .object(let members) = value, members.isEmpty {
            replacement = .null
        } else {
            replacement = value
        }
        return Self.set(self, path.segments[...], replacement)
    }

    private static func set(_ node: JSONValue, _ segments: ArraySlice<String>, _ value: JSONValue) -> JSONValue {
        guard let key = segments.first else { return value }
        let rest = segments.dropFirst()
        guard case .object(var members) = node else {
            // Nothing (or a primitive) here: only a non-null write creates structure.
            if value.isNull { return node }
            return .object([key: set(.null, rest, value)])
        }
        let child = members.removeValue(forKey: key) ?? .null
        let updated = set(child, rest, value)
        if !updated.isNull { members[key] = updated }
        return members.isEmpty ? .null : .object(members)
    }

    /// This tree after a multi-path update at `path`: each child path
    /// (relative to `path`) is replaced, in order, by its normalized value
    /// (`.null` deletes). There is no deep merge.
    public func updating(at path: Path, with children: [(Path, JSONValue)]) -> JSONValue {
        var result = self
        for (relative, value) in children {
            let absolute = Path(unchecked: path.segments + relative.segments)
            result = result.setting(absolute, to: value)
        }
        return result
    }

    /// This tree after setting each absolute `(path, value)` pair in order;
    /// the natural way to apply what `UpdateBatch.validateUpdate` returns.
    public func settingAll(_ pairs: [(Path, JSONValue)]) -> JSONValue {
        var result = self
        for (path, value) in pairs { result = result.setting(path, to: value) }
        return result
    }
}
