/// A Firebase query (`orderBy` with optional range filters and one limit) over the children of
/// one location, as the REST API takes it in query parameters.
///
/// Applying a query is a pure function of the location's value, so the local API can answer a
/// query GET from any snapshot and tests can check it against the Firebase documentation.
/// Ordering is `FirebaseOrder`'s, the same as rendering uses.
public struct FirebaseQuery: Hashable, Sendable {
    /// What the children are ordered (and filtered) by.
    public enum Order: Hashable, Sendable {
        /// `orderBy="$key"`: by key (32-bit integer keys first, numerically).
        case key
        /// `orderBy="$value"`: by the child's own value, ties by key.
        case value
        /// `orderBy="a/b"`: by the value at that path below each child (null when absent),
        /// ties by key.
        case child(Path)
    }

    /// Which end of the ordered, filtered children to keep.
    public enum Limit: Hashable, Sendable {
        /// `limitToFirst=n`: the first n.
        case first(Int)
        /// `limitToLast=n`: the last n.
        case last(Int)
    }

    /// The ordering.
    public var order: Order
    /// Keep children at or after this value (a key when ordering by key), inclusive.
    public var startAt: JSONValue?
    /// Keep children at or before this value, inclusive.
    public var endAt: JSONValue?
    /// Keep only children whose ordering value equals this one.
    public var equalTo: JSONValue?
    /// Keep at most this many children from one end, after filtering.
    public var limit: Limit?

    /// A query; `parse` is the checked way to build one from request parameters.
    public init(order: Order, startAt: JSONValue? = nil, endAt: JSONValue? = nil, equalTo: JSONValue? = nil, limit: Limit? = nil) {
        self.order = order
        self.startAt = startAt
        self.endAt = endAt
        self.equalTo = equalTo
        self.limit = limit
    }

    /// Whether anything beyond the ordering was asked for (a range filter or a limit).
    public var isFiltered: Bool {
        startAt != nil || endAt != nil || equalTo != nil || limit != nil
    }

    /// The query's answer for a location holding `value`.
    ///
    /// - An object: its children ordered by `order` (ties by key), then kept within
    ///   `startAt`/`endAt`/`equalTo`, then cut to the limit; the result is an object of the
    ///   remaining children, `{}` when none remain. (The REST API returns queries as JSON
    ///   objects, whose member order is not significant; `serialized()` renders keys in key
    ///   order whatever the query's order, and an array-like result renders as an array.)
    /// - Null (nothing there): null.
    /// - A primitive has no children. Like the Firebase client SDKs' view filters, a query with
    ///   only `orderBy` returns it unchanged and a query with any filter or limit returns null.
    ///   (What the hosted REST server does here is unconfirmed.)
    public func apply(to value: JSONValue) -> JSONValue {
        let members: [String: JSONValue]
        switch value {
        case .null:
            return .null
        case .object(let children):
            members = children
        case .array(let items):
            // Raw (unnormalized) input: an array is the object keyed "0", "1", ...
            var children: [String: JSONValue] = [:]
            for (index, item) in items.enumerated() where !item.isNull { children[String(index)] = item }
            members = children
        case .bool, .number, .string:
            return isFiltered ? .null : value
        }
        var entries = members.map { member in
            (key: member.key, value: member.value, orderValue: orderValue(of: member.value))
        }
        switch order {
        case .key:
            entries.sort { FirebaseOrder.keyLess($0.key, $1.key) }
        case .value, .child:
            entries.sort { FirebaseOrder.entryLess(key: $0.key, value: $0.orderValue, key: $1.key, value: $1.orderValue) }
        }
        let bounds = canonicalKeyBounds
        var kept = entries.filter { bounds.inRange(key: $0.key, orderValue: $0.orderValue) }
        switch limit {
        case .first(let count)?: kept = Array(kept.prefix(count))
        case .last(let count)?: kept = Array(kept.suffix(count))
        case nil: break
        }
        var result: [String: JSONValue] = [:]
        result.reserveCapacity(kept.count)
        for entry in kept { result[entry.key] = entry.value }
        return .object(result)
    }

    /// The value a child is ordered by (unused when ordering by key).
    private func orderValue(of child: JSONValue) -> JSONValue {
        switch order {
        case .key: return .null
        case .value: return child
        case .child(let path): return child.value(at: path)
        }
    }

    /// This query with its key bounds in NFC when it orders by key: keys are compared in the one
    /// spelling the tree holds them in (`parse` gives such bounds already).
    private var canonicalKeyBounds: FirebaseQuery {
        guard case .key = order else { return self }
        func canonical(_ bound: JSONValue?) -> JSONValue? {
            guard case .string(let key)? = bound else { return bound }
            return .string(CanonicalText.nfc(key))
        }
        return FirebaseQuery(order: order, startAt: canonical(startAt), endAt: canonical(endAt), equalTo: canonical(equalTo), limit: limit)
    }

    /// Whether a child lies within `startAt`, `endAt` and `equalTo` (all inclusive).
    private func inRange(key: String, orderValue: JSONValue) -> Bool {
        // `less(a, b)` is the query's order on bounds and children alike.
        let less: (JSONValue, JSONValue) -> Bool
        let subject: JSONValue
        switch order {
        case .key:
            subject = .string(key)
            less = { lhs, rhs in
                // Key bounds are strings by construction in `parse`; anything else sorts first.
                guard case .string(let a) = lhs else { return true }
                guard case .string(let b) = rhs else { return false }
                return FirebaseOrder.keyLess(a, b)
            }
        case .value, .child:
            subject = orderValue
            less = FirebaseOrder.valueLess
        }
        if let startAt, less(subject, startAt) { return false }
        if let endAt, less(endAt, subject) { return false }
        if let equalTo, less(subject, equalTo) || less(equalTo, subject) { return false }
        return true
    }
}
