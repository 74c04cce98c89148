// Server value placeholders (`{".sv": ...}`), resolved by the writing node.

extension JSONValue {
    /// This raw value (written at `path`) with every server value placeholder
    /// replaced, at any depth, so that what is stored and replicated is plain
    /// data:
    /// - `{".sv": "timestamp"}` becomes `nowMillis`;
    /// - `{".sv": {"increment": n}}` becomes the number currently stored at
    ///   that path (asked of `current`) plus n, or n when that is not a number.
    ///
    /// Any other object holding ".sv" throws `TreeError.invalidServerValue`.
    /// Run this before `normalized()`, which would reject the ".sv" key.
    public func resolvingServerValues(at path: Path, nowMillis: Double, current: (Path) -> JSONValue) throws(TreeError) -> JSONValue {
        switch self {
        case .null, .bool, .number, .string:
            return self
        case .array(let items):
            var resolved: [JSONValue] = []
            resolved.reserveCapacity(items.count)
            for (index, item) in items.enumerated() {
                guard !item.isNull else { resolved.append(item); continue }
                let childPath = try path.appending(String(index))
                resolved.append(try item.resolvingServerValues(at: childPath, nowMillis: nowMillis, current: current))
            }
            return .array(resolved)
        case .object(let members):
            if let placeholder = members[".sv"] {
                guard members.count == 1 else { throw .invalidServerValue }
                return try Self.resolvePlaceholder(placeholder, at: path, nowMillis: nowMillis, current: current)
            }
            var resolved: [String: JSONValue] = [:]
            for (key, item) in members {
                guard !item.isNull else { resolved[key] = item; continue }
                let childPath = try path.appending(key)
                resolved[key] = try item.resolvingServerValues(at: childPath, nowMillis: nowMillis, current: current)
            }
            return .object(resolved)
        }
    }

    /// Whether this value holds a server value placeholder anywhere, so that
    /// callers can skip the resolution walk (and the reads it makes) otherwise.
    public var containsServerValues: Bool {
        switch self {
        case .null, .bool, .number, .string: return false
        case .array(let items): return items.contains { $0.containsServerValues }
        case .object(let members):
            return members[".sv"] != nil || members.values.contains { $0.containsServerValues }
        }
    }

    private static func resolvePlaceholder(_ placeholder: JSONValue, at path: Path, nowMillis: Double, current: (Path) -> JSONValue) throws(TreeError) -> JSONValue {
        switch placeholder {
        case .string("timestamp"):
            return .number(nowMillis)
        case .object(let spec):
            guard spec.count == 1, case .number(let delta)? = spec["increment"] else { throw .invalidServerValue }
            if case .number(let base) = current(path) {
                let sum = base + delta
                guard sum.isFinite else { throw .nonFiniteNumber }
                return .number(sum)
            }
            return .number(delta)
        default:
            throw .invalidServerValue
        }
    }
}
