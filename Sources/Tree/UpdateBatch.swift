/// A validated multi-path update (Firebase PATCH): absolute paths, each with
/// the normalized value that replaces it (`.null` deletes).
///
/// Validation happens once, at the edge, so that stores and peers can apply
/// the pairs blindly: they are non-overlapping, legal and in a fixed order.
public struct UpdateBatch: Sendable {
    /// Where the update was addressed.
    public let base: Path
    /// Absolute paths and their new values, sorted by `Path` order
    /// (UTF-8 bytes of the storage key).
    public let children: [(Path, JSONValue)]

    /// Validates `body` (see `validateUpdate(at:_:)`).
    public init(at base: Path, body: JSONValue) throws(TreeError) {
        self.base = base
        self.children = try Self.validateUpdate(at: base, body)
    }

    /// Turns a PATCH body, an object whose keys are relative paths such as
    /// "c/d", into absolute `(path, normalized value)` pairs sorted by path.
    /// A non-object or empty body, an invalid key or path, or two keys where
    /// one is (or equals, after normalising) an ancestor of the other is an
    /// error. Values must hold no server values (see the overload).
    public static func validateUpdate(at base: Path, _ body: JSONValue) throws(TreeError) -> [(Path, JSONValue)] {
        try validateUpdate(at: base, body, nowMillis: nil, current: { _ in .null })
    }

    /// Like `validateUpdate(at:_:)`, but first resolves server values in each
    /// child against `current` (the tree before the update) and `nowMillis`.
    public static func validateUpdate(at base: Path, _ body: JSONValue, nowMillis: Double, current: (Path) -> JSONValue) throws(TreeError) -> [(Path, JSONValue)] {
        try validateUpdate(at: base, body, nowMillis: Optional(nowMillis), current: current)
    }

    private static func validateUpdate(at base: Path, _ body: JSONValue, nowMillis: Double?, current: (Path) -> JSONValue) throws(TreeError) -> [(Path, JSONValue)] {
        guard case .object(let members) = body else {
            throw .invalidUpdate("the body must be an object of paths")
        }
        guard !members.isEmpty else { throw .invalidUpdate("the body is empty") }
        var seen = Set<Path>()
        var pairs: [(Path, JSONValue)] = []
        for (key, raw) in members {
            let path = try base.appending(Path(key))
            guard seen.insert(path).inserted else {
                throw .invalidUpdate("\"\(key)\" names the same path as another key")
            }
            var value = raw
            if let nowMillis {
                value = try raw.resolvingServerValues(at: path, nowMillis: nowMillis, current: current)
            }
            pairs.append((path, try value.normalized(at: path)))
        }
        pairs.sort { $0.0 < $1.0 }
        for (path, _) in pairs {
            for ancestor in path.ancestors where seen.contains(ancestor) {
                throw .invalidUpdate("\"\(ancestor.relative(to: base) ?? ancestor)\" is an ancestor of \"\(path.relative(to: base) ?? path)\"")
            }
        }
        return pairs
    }
}

extension JSONValue {
    /// Shorthand for `UpdateBatch.validateUpdate(at:_:)`.
    public static func validateUpdate(at base: Path, _ body: JSONValue) throws(TreeError) -> [(Path, JSONValue)] {
        try UpdateBatch.validateUpdate(at: base, body)
    }
}
