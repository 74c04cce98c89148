/// The paths of live state (Protocol.md §5.7): typing flags, a user's own status, read
/// receipts and derived presence. What is there describes *now*, not history, so it is never a
/// record: a value travels signed beside the records, each node keeps it in memory (receipts
/// also on its disk) and shows it over its tree.
///
/// Why these paths: they are where Firebase chat tutorials keep live state
/// (`typingIndicator`, a `status/$uid` connection flag, per-member read markers), so apps written
/// like them work unchanged, and each names its writer (`$uid`) in the path, so a signature is
/// enough to decide who may write there.
public enum LiveKind: Equatable, Sendable {
    /// `/conversations/$cid/typingIndicator/$uid`: gone when its node is.
    case typing
    /// `/status/$uid` and below: the user's live status (the node sets `away` there); gone
    /// when its node is.
    case status
    /// `/conversations/$cid/readReceipts/$uid`: the last message `$uid` read; replaceable, kept.
    case receipt
}

public enum LivePaths {
    /// Where the node shows each user's presence (`{state, lastSeen}`), derived, never written.
    public static let presenceRoot = "presence"

    /// The kind of live value at `path` and the user id that alone may write it, or nil when
    /// the path is ordinary tree data (or the derived presence, see `isPresence`).
    public static func classify(_ path: Path) -> (kind: LiveKind, owner: String)? {
        let s = path.segments
        if s.count == 4, s[0] == "conversations", s[2] == "typingIndicator" { return (.typing, s[3]) }
        if s.count == 4, s[0] == "conversations", s[2] == "readReceipts" { return (.receipt, s[3]) }
        if s.count >= 2, s[0] == "status" { return (.status, s[1]) }
        return nil
    }

    /// Whether `path` lies in the derived presence (`/presence` or below).
    public static func isPresence(_ path: Path) -> Bool { path.segments.first == presenceRoot }

    /// Whether `path` is inside a live subtree: a live value's path or below it, or presence.
    public static func isLive(_ path: Path) -> Bool {
        let s = path.segments
        if isPresence(path) { return true }
        if s.count >= 2, s[0] == "status" { return true }
        return s.count >= 4 && s[0] == "conversations" && (s[2] == "typingIndicator" || s[2] == "readReceipts")
    }

    /// Whether the value at `path` may hold live values: the root, a live subtree, or an
    /// ancestor of one. Reads elsewhere need no overlay.
    public static func touches(_ path: Path) -> Bool {
        let s = path.segments
        guard let first = s.first else { return true }
        if first == "status" || first == presenceRoot { return true }
        guard first == "conversations" else { return false }
        return s.count <= 2 || s[2] == "typingIndicator" || s[2] == "readReceipts"
    }

    /// Whether `path` is the root of a subtree the live layer owns (`/status`, a conversation's
    /// `typingIndicator`) or inside one: what shows there is the live values alone.
    public static func isWhollyLive(_ path: Path) -> Bool {
        roots.contains { pattern in
            pattern.count <= path.segments.count && zip(pattern, path.segments).allSatisfy { $0 == "*" || $0 == $1 }
        }
    }

    /// Patterns of the subtrees the live layer owns; `*` matches any key. A stored record's
    /// values there are hidden: the live layer alone shows what is there.
    static let roots: [[String]] = [
        ["conversations", "*", "typingIndicator"], ["conversations", "*", "readReceipts"], ["status"], [presenceRoot],
    ]

    /// `base`, the stored value at `path`, with the live subtrees taken out and `entries` (live
    /// values and presence by their full paths; null ones are absent) put in. Pure: the same
    /// inputs give the same value on every node.
    public static func overlay(_ base: JSONValue, at path: Path, entries: [(Path, JSONValue)]) -> JSONValue {
        var value = base
        for pattern in roots { value = strip(value, segments: path.segments, pattern: pattern[...]) }
        for (entryPath, entryValue) in entries where entryValue != .null {
            if let relative = entryPath.relative(to: path) {
                value = set(value, relative.segments[...], entryValue)
            } else if let inner = path.relative(to: entryPath) {
                value = get(entryValue, inner.segments[...]) ?? value
            }
        }
        return value
    }

    /// `window`, a query's answer at `path` read from the stored tree, with the live layer over
    /// it, as if the query had been run on the tree the API shows (stored + live). Each child in
    /// the window gets the live values below it; a child that is wholly live (a conversation's
    /// `typingIndicator`, a user's `/status`) may enter the window, and then the query is applied
    /// again to what was merged. That is exact because a window of the merged children equals
    /// the query over the stored children with the live ones added: limits keep the first or
    /// last *n* and ranges keep members one by one. Stored children outside the window are never
    /// read; a live value below one of them does not bring it in.
    public static func overlay(window: JSONValue, of query: FirebaseQuery, at path: Path, entries: [(Path, JSONValue)]) -> JSONValue {
        var present = Set<String>()
        if case let .object(members) = window { present = Set(members.keys) }
        var added = false
        let kept = entries.filter { entryPath, value in
            guard let relative = entryPath.relative(to: path), let key = relative.segments.first else {
                return path.relative(to: entryPath) != nil  // the query's location is inside a live value
            }
            if present.contains(key) { return true }
            guard value != .null, let child = try? path.appending(key), isWhollyLive(child) else { return false }
            added = true
            return true
        }
        let merged = overlay(window, at: path, entries: kept)
        guard added else { return merged }
        return query.apply(to: merged)
    }

    /// `base`, a `shallow=true` answer at `path` read from the stored tree, with the live layer
    /// over it: what `shallow` gives for the value `overlay` shows. The live subtrees are taken
    /// out of the stored children as `overlay` takes them out (a child that is wholly live goes;
    /// a stored child with live values below it stays `true`), then each live value adds the
    /// child it lies under, as `true`.
    public static func shallowOverlay(_ base: JSONValue, at path: Path, entries: [(Path, JSONValue)]) -> JSONValue {
        var value = base
        for pattern in roots { value = strip(value, segments: path.segments, pattern: pattern[...]) }
        for (entryPath, entryValue) in entries where entryValue != .null {
            if let relative = entryPath.relative(to: path) {
                guard let key = relative.segments.first else { return shallow(entryValue) }
                var members: [String: JSONValue] = [:]
                if case let .object(existing) = value { members = existing }
                members[key] = .bool(true)
                value = .object(members)
            } else if let inner = path.relative(to: entryPath), let found = get(entryValue, inner.segments[...]) {
                return shallow(found)
            }
        }
        return value
    }

    /// Removes from `value` (at `segments`) whatever matches `pattern`.
    private static func strip(_ value: JSONValue, segments: [String], pattern: ArraySlice<String>) -> JSONValue {
        var pattern = pattern
        var rest = segments[...]
        while let first = rest.first {
            guard let head = pattern.first else { return .null }  // inside a live subtree
            guard head == "*" || head == first else { return value }  // elsewhere
            pattern = pattern.dropFirst()
            rest = rest.dropFirst()
        }
        if pattern.isEmpty { return .null }
        return remove(value, pattern)
    }

    private static func remove(_ value: JSONValue, _ pattern: ArraySlice<String>) -> JSONValue {
        guard case var .object(members) = value, let head = pattern.first else { return value }
        let below = pattern.dropFirst()
        let keys = head == "*" ? Array(members.keys) : [head]
        for key in keys {
            guard let child = members[key] else { continue }
            let stripped = below.isEmpty ? JSONValue.null : remove(child, below)
            if stripped == .null { members.removeValue(forKey: key) } else { members[key] = stripped }
        }
        return members.isEmpty ? .null : .object(members)
    }

    private static func set(_ value: JSONValue, _ segments: ArraySlice<String>, _ leaf: JSONValue) -> JSONValue {
        guard let head = segments.first else { return leaf }
        var members: [String: JSONValue] = [:]
        if case let .object(existing) = value { members = existing }
        members[head] = set(members[head] ?? .null, segments.dropFirst(), leaf)
        return .object(members)
    }

    private static func get(_ value: JSONValue, _ segments: ArraySlice<String>) -> JSONValue? {
        guard let head = segments.first else { return value }
        guard case let .object(members) = value, let child = members[head] else { return nil }
        return get(child, segments.dropFirst())
    }
}
