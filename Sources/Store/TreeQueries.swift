import SQLite
import Tree

extension Store {
    /// The answer of a Firebase query at `path`: exactly `query.apply(to: value(at: path))`
    /// (the reference semantics, `FirebaseQuery`), read without the whole location where an
    /// index allows it.
    ///
    /// A zone list (`/users`, `/conversations/$cid/messages`) that holds children is answered from
    /// an index (`ZoneOrders`): by key from the zones' own, otherwise from its order rows; one
    /// range scan for the keys, then one row per child kept, so `limitToLast=20` costs the same
    /// for ten messages or a million. Other locations are read whole and filtered.
    public func query(_ query: FirebaseQuery, at path: Path) throws -> JSONValue {
        if ZoneOrders.isZoneList(path), let answer = try indexedQuery(query, at: path) { return answer }
        return query.apply(to: try value(at: path))
    }

    /// The answer from the list's keys in `zones` or its order index, declaring the ordering on
    /// first use; nil when the list has no children (then its value is null or a primitive of the
    /// open zone, and the reference answers) or has no room for another ordering.
    private func indexedQuery(_ query: FirebaseQuery, at list: Path) throws -> JSONValue? {
        let orders = zones.orders
        if let answer = try readTransaction({ () throws -> JSONValue?? in
            guard let keys = try orders.keysByZone(list: list, query: query) else { return .none }
            guard try hasZoneChildren(list) else { return .some(nil) }
            return .some(try members(of: list, keys: keys))
        }) { return answer }
        let field = ZoneOrders.field(query.order)
        let listKey = StoreKey.of(list)
        var id = try db.first("SELECT id FROM zone_orders WHERE list = ? AND field = ?", [.text(listKey), .text(field)]) { $0.int64(0) }
        if id == nil {
            guard try hasZoneChildren(list) else { return nil }
            id = try transaction { try orders.ordering(list: list, field: field) }
        }
        guard let id else { return nil }
        return try readTransaction {
            guard try hasZoneChildren(list) else { return nil }
            return try members(of: list, keys: orders.keys(id, query: query))
        }
    }

    /// The object of the children `keys` names in `list`, each read from its zone (a child with
    /// no value, deleted or disputed, is left out).
    private func members(of list: Path, keys: [String]) throws -> JSONValue {
        var members: [String: JSONValue] = [:]
        for key in keys {
            let zone = Zone.of(try list.appending(key))
            let value = try zones.value(of: zone)
            if value != .null { members[key] = value }
        }
        return .object(members)
    }

    /// Whether any zone directly below the zone list `list` has a value.
    private func hasZoneChildren(_ list: Path) throws -> Bool {
        let (low, high) = StoreKey.descendants(StoreKey.of(list))
        return try db.first("SELECT 1 FROM zones WHERE zone >= ? AND zone < ? AND value IS NOT NULL LIMIT 1",
                            [.text(low), .text(high)]) { _ in true } ?? false
    }

    /// The value `shallow=true` returns at `path`: exactly `shallow(value(at: path))`, read without
    /// the children's subtrees outside zones: the child keys come from skip scans (`childKeys`),
    /// or for a zone list from one scan of its zones' keys.
    public func shallowValue(at path: Path) throws -> JSONValue {
        guard Zone.of(path) == .open else { return shallow(try value(at: path)) }
        return try readTransaction {
            let keys: [String]
            if ZoneOrders.isZoneList(path) {
                let key = StoreKey.of(path)
                let (low, high) = StoreKey.descendants(key)
                keys = try db.all("SELECT zone FROM zones WHERE zone >= ? AND zone < ? AND value IS NOT NULL", [.text(low), .text(high)]) {
                    Store.relativeSegments($0.text(0), below: key).first ?? ""
                }
            } else {
                keys = try childKeys(of: path)
            }
            guard !keys.isEmpty else { return try value(at: path) }
            return .object(Dictionary(keys.map { ($0, JSONValue.bool(true)) }, uniquingKeysWith: { first, _ in first }))
        }
    }
}
