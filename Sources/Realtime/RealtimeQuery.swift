import Tree

/// A query as the Firebase SDKs send it with a listen or a get: an object of `i` (the index:
/// `.key`, `.value`, `.priority`, or a child path; `.priority` when absent), `sp`/`sn` (start
/// value and key), `sin` (whether the start is inclusive, false for `startAfter`), `ep`/`en`/`ein`
/// (the end likewise, `ein` false for `endBefore`), `l` (a limit) and `vf` (`l` to keep the first
/// children, `r` the last).
///
/// The store answers `FirebaseQuery`s (orderBy, inclusive value bounds, a limit). A query that
/// says no more than that is handed to it as it is (`exact`); one that needs key bounds or
/// exclusive bounds is answered by the store's inclusive superset, then cut here by
/// `window(of:)`. Nodes keep no priorities, so every child's priority is null and the priority
/// index orders by key.
public struct RealtimeQuery: Hashable, Sendable {
    public enum Index: Hashable, Sendable {
        case priority, key, value
        case child(Path)
    }

    /// One end of a range: the value (a key for the key index), the key that breaks ties among
    /// children with that value (nil: every such child), and whether the end itself is in.
    public struct Bound: Hashable, Sendable {
        public var value: JSONValue
        public var name: String?
        public var inclusive: Bool
    }

    public var index: Index = .priority
    public var start: Bound?
    public var end: Bound?
    /// How many children to keep, and from which end (`fromLeft`: the first ones).
    public var limit: Int?
    public var fromLeft = true

    /// The keys the SDKs use for the smallest and largest possible key in a bound.
    public static let minName = "[MIN_NAME]"
    public static let maxName = "[MAX_NAME]"

    /// The query with no filter: the whole location.
    public init() {}

    /// Reads a query object; nil, null and `{}` are the whole location.
    public init(object: JSONValue?) throws(RealtimeError) {
        guard let object, object != .null else { return }
        guard case let .object(members) = object else { throw .invalidArgs("A query is an object") }
        let known: Set<String> = ["i", "sp", "sn", "sin", "ep", "en", "ein", "l", "vf"]
        if let unknown = members.keys.first(where: { !known.contains($0) }) { throw .invalidArgs("Unknown query parameter \(unknown)") }
        switch members["i"] {
        case nil, .string(".priority")?: index = .priority
        case .string(".key")?: index = .key
        case .string(".value")?: index = .value
        case let .string(text)?:
            guard let path = try? Path(text), !path.isRoot else { throw .invalidArgs("Invalid index \(text)") }
            index = .child(path)
        default: throw .invalidArgs("The index \"i\" is a string")
        }
        start = try Self.bound(members, value: "sp", name: "sn", inclusive: "sin", index: index)
        end = try Self.bound(members, value: "ep", name: "en", inclusive: "ein", index: index)
        switch members["l"] {
        case nil: break
        case let .number(n)?:
            guard n >= 0, n <= 2_147_483_647, n.rounded(.towardZero) == n else { throw .invalidArgs("A limit is a whole number") }
            limit = Int(n)
        default: throw .invalidArgs("A limit is a number")
        }
        switch members["vf"] {
        case nil: fromLeft = limit == nil || start != nil
        case .string("l")?: fromLeft = true
        case .string("r")?: fromLeft = false
        default: throw .invalidArgs("\"vf\" is \"l\" or \"r\"")
        }
    }

    private static func bound(_ members: [String: JSONValue], value: String, name: String, inclusive: String,
                              index: Index) throws(RealtimeError) -> Bound? {
        guard let v = members[value] else {
            guard members[name] == nil, members[inclusive] == nil else { throw .invalidArgs("\"\(name)\" without \"\(value)\"") }
            return nil
        }
        switch v {
        case .object, .array: throw .invalidArgs("A bound is a string, number, boolean or null")
        case .string(let key) where index == .key: return try Self.keyBound(.string(CanonicalText.nfc(key)), members, inclusive)
        default:
            if index == .key { throw .invalidArgs("A bound of the key index is a key") }
        }
        var bound = Bound(value: v, name: nil, inclusive: true)
        switch members[name] {
        case nil: break
        case let .string(key)?: bound.name = CanonicalText.nfc(key)
        default: throw .invalidArgs("\"\(name)\" is a key")
        }
        switch members[inclusive] {
        case nil: break
        case let .bool(flag)?: bound.inclusive = flag
        default: throw .invalidArgs("\"\(inclusive)\" is a boolean")
        }
        return bound
    }

    private static func keyBound(_ value: JSONValue, _ members: [String: JSONValue], _ inclusive: String) throws(RealtimeError) -> Bound {
        var bound = Bound(value: value, name: nil, inclusive: true)
        switch members[inclusive] {
        case nil: break
        case let .bool(flag)?: bound.inclusive = flag
        default: throw .invalidArgs("\"\(inclusive)\" is a boolean")
        }
        return bound
    }

    /// Whether this is the whole location (no range, no limit; any ordering).
    public var loadsAllData: Bool { start == nil && end == nil && limit == nil }

    /// What to ask the store, and whether its answer is the query's answer as it is (else it is
    /// a superset to pass through `window(of:)`). A nil query reads the location whole.
    public var storeQuery: (query: FirebaseQuery?, exact: Bool) {
        if loadsAllData { return (nil, true) }
        let limitValue: FirebaseQuery.Limit? = limit.map { fromLeft ? .first($0) : .last($0) }
        switch index {
        case .priority:
            // Every priority is null: with no range this is key order; a range compares nulls.
            guard start == nil, end == nil else { return (nil, false) }
            return (FirebaseQuery(order: .key, limit: limitValue), true)
        case .key, .value, .child:
            let order: FirebaseQuery.Order
            switch index {
            case .key: order = .key
            case .value: order = .value
            case let .child(path): order = .child(path)
            case .priority: order = .key
            }
            let exact = [start, end].allSatisfy { $0 == nil || ($0!.inclusive && ($0!.name == nil || index == .key)) }
            var query = FirebaseQuery(order: order, startAt: start?.value, endAt: end?.value)
            if exact { query.limit = limitValue }
            return (query, exact)
        }
    }

    /// The query's answer, given the location's value or a superset of the answer's children.
    public func window(of value: JSONValue) -> JSONValue {
        let members: [String: JSONValue]
        switch value {
        case .null: return .null
        case let .object(children): members = children
        case let .array(items):
            var children: [String: JSONValue] = [:]
            for (i, item) in items.enumerated() where !item.isNull { children[String(i)] = item }
            members = children
        case .bool, .number, .string: return loadsAllData ? value : .null
        }
        var entries = members.map { (key: $0.key, value: $0.value, order: orderValue(of: $0.value)) }
        entries.sort { compare(($0.order, $0.key), ($1.order, $1.key)) < 0 }
        entries = entries.filter { entry in
            if let start {
                let c = compare((entry.order, entry.key), boundPoint(start, isStart: true))
                if c < 0 || (c == 0 && !start.inclusive) { return false }
            }
            if let end {
                let c = compare((entry.order, entry.key), boundPoint(end, isStart: false))
                if c > 0 || (c == 0 && !end.inclusive) { return false }
            }
            return true
        }
        if let limit { entries = fromLeft ? Array(entries.prefix(limit)) : Array(entries.suffix(limit)) }
        var result: [String: JSONValue] = [:]
        for entry in entries { result[entry.key] = entry.value }
        return result.isEmpty ? .null : .object(result)
    }

    private func orderValue(of child: JSONValue) -> JSONValue {
        switch index {
        case .priority, .key: return .null
        case .value: return child
        case let .child(path): return child.value(at: path)
        }
    }

    /// A bound as a point in (order value, key) space; with no name the point sits before or
    /// after every key sharing its value, so that the inclusive bound takes them all.
    private func boundPoint(_ bound: Bound, isStart: Bool) -> (JSONValue, String) {
        if index == .key, case let .string(key) = bound.value { return (.null, key) }
        let name = bound.name ?? (isStart == bound.inclusive ? Self.minName : Self.maxName)
        return (bound.value, name)
    }

    /// Orders two (order value, key) points: by value, then by key, with the two sentinel
    /// names below and above every key.
    private func compare(_ a: (JSONValue, String), _ b: (JSONValue, String)) -> Int {
        if FirebaseOrder.valueLess(a.0, b.0) { return -1 }
        if FirebaseOrder.valueLess(b.0, a.0) { return 1 }
        return Self.compareNames(a.1, b.1)
    }

    static func compareNames(_ a: String, _ b: String) -> Int {
        if a == b { return 0 }
        if a == minName || b == maxName { return -1 }
        if b == minName || a == maxName { return 1 }
        return FirebaseOrder.keyLess(a, b) ? -1 : 1
    }
}
