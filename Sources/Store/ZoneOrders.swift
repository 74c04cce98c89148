import SQLite
import Tree

/// Order indexes over *zone lists*, the locations whose children are all protected zones:
/// `/users` (profiles) and `/conversations/$cid/messages` (messages). These are the large
/// locations a chat app queries (`orderBy` with `limitToLast`: the last page of a conversation),
/// and since each child is one row of `zones`, an index row per child and ordering answers such a
/// query with one range scan and a point read per child returned.
///
/// How the node learns what to index (Firebase's `.indexOn`, learned instead of declared): the
/// first query of a zone list with a given ordering (`$value` or a child path such as `date`)
/// declares it in `zone_orders` and builds its rows from the list's zones; from then on every
/// change of a zone in that list updates them, in the transaction that changes the zone. At
/// most `maxOrdersPerList` orderings are kept per list, so a client cannot grow the store
/// without bound by asking for orderings; beyond that a query reads the list whole, as any
/// query of another location does.
///
/// The key ordering (`$key`) needs no rows of its own while every key of the list sorts by its
/// bytes as Firebase sorts keys: `zones` is keyed by the zone's path, so its own index holds the
/// list's keys in that order already (`keysByZone`). Keys that sort otherwise (`sortsAsBytes`
/// false: a 32-bit integer, or text with a scalar in U+E000-U+FFFF) are rare; the first one in
/// a list declares the list's key ordering, built then from its zones, and from then on the
/// list is read from its rows. A message stored thus costs one index entry fewer (a third of
/// what storing a message wrote to SQLite besides its record) and none of the store's size.
///
/// - `zone_orders(id, list, field)`: a declared ordering of one list (`list` is its store key,
///   `field` is `$key`, `$value` or a child path such as `/date`);
/// - `zone_order_rows(ord, value, key)`: one row per present child (a zone with a value): the
///   ordering value and the key, encoded by `OrderKey` so that bytewise order is Firebase's.
struct ZoneOrders {
    let db: Connection
    /// The store's orderings already read (nil: read them each time, as migrations and
    /// snapshots do).
    var cache: ZoneOrderCache? = nil

    static let maxOrdersPerList = 8

    /// Whether `path` is a zone list: `/users` or `/conversations/$cid/messages`.
    static func isZoneList(_ path: Path) -> Bool {
        let segments = path.segments
        return (segments.count == 1 && segments[0] == "users") || Zone.isMessageList(segments)
    }

    /// The field name an ordering is declared under.
    static func field(_ order: FirebaseQuery.Order) -> String {
        switch order {
        case .key: return "$key"
        case .value: return "$value"
        case .child(let path): return path.description
        }
    }

    /// The ordering value of a child holding `value`, encoded (empty when ordering by key).
    static func encodedValue(_ value: JSONValue, field: String) -> [UInt8] {
        switch field {
        case "$key": return []
        case "$value": return OrderKey.value(value)
        default:
            guard let path = try? Path(field) else { return OrderKey.value(.null) }
            return OrderKey.value(value.value(at: path))
        }
    }

    // MARK: Keeping the rows

    /// Brings the rows of every ordering declared for the zone's list from the zone's `old`
    /// value to its `new` one (null: absent). Call wherever a zone's stored value changes.
    /// `zoneKey`, the zone's `StoreKey` when the caller has it, spares working out its list's
    /// (a new path and key for every message a sync stores). `new` is worked out only when some
    /// list has an ordering: a message arriving holds its value in its bytes (`WritePair`).
    func zoneChanged(_ zone: Zone, old: JSONValue, new: @autoclosure () -> JSONValue, zoneKey: String? = nil) throws {
        guard try anyDeclared() else { return }
        let new = new()
        guard old != new else { return }
        let root = zone.root
        guard let list = root.parent, let key = root.key else { return }
        let orders = try declared(list: zoneKey.flatMap(StoreKey.parentKey) ?? StoreKey.of(list))
        guard !orders.isEmpty else { return }
        let encodedKey = OrderKey.key(key)
        // Bound directly on cached statements: a sync runs this for every message it stores.
        for (id, field) in orders {
            if old != .null {
                let delete = try db.cachedStatement("DELETE FROM zone_order_rows WHERE ord = ? AND value = ? AND key = ?")
                defer { delete.reset(); delete.clearBindings() }
                try delete.bind(.integer(id), at: 1)
                try delete.bind(blob: ZoneOrders.encodedValue(old, field: field)[...], at: 2)
                try delete.bind(blob: encodedKey[...], at: 3)
                while try delete.step() {}
            }
            if new != .null {
                let insert = try db.cachedStatement("INSERT OR REPLACE INTO zone_order_rows(ord, value, key) VALUES (?, ?, ?)")
                defer { insert.reset(); insert.clearBindings() }
                try insert.bind(.integer(id), at: 1)
                try insert.bind(blob: ZoneOrders.encodedValue(new, field: field)[...], at: 2)
                try insert.bind(blob: encodedKey[...], at: 3)
                while try insert.step() {}
            }
        }
    }

    /// Whether any list has an ordering declared, from the cache when it knows.
    /// Without a cache the list's own lookup answers, rather than a second query each time.
    private func anyDeclared() throws -> Bool {
        guard let cache else { return true }
        if let known = cache.anyDeclared { return known }
        let any = try db.scalarInt("SELECT EXISTS (SELECT 1 FROM zone_orders)") == 1
        cache.anyDeclared = any
        return any
    }

    /// The orderings declared for a list (by its store key).
    private func declared(list: String) throws -> [(id: Int64, field: String)] {
        if let known = cache?.orders(of: list) { return known }
        let statement = try db.cachedStatement("SELECT id, field FROM zone_orders WHERE list = ?")
        defer { statement.reset(); statement.clearBindings() }
        try statement.bind(.text(list), at: 1)
        var orders = [(id: Int64, field: String)]()
        while try statement.step() { orders.append((statement.int64(0), statement.text(1))) }
        cache?.remember(orders, of: list)
        return orders
    }

    /// The id of the ordering of `list` by `field`, declaring and building it when it is new;
    /// nil once the list has `maxOrdersPerList` others. Call inside a write transaction.
    ///
    /// One of the places is the key ordering's, kept for it whether it is declared yet or not:
    /// a list's keys declare it (`zoneCreated`) whenever one does not sort as its bytes, so the
    /// orderings queries declare may take only the others, and a list never has more than
    /// `maxOrdersPerList` in all.
    func ordering(list: Path, field: String) throws -> Int64? {
        let listKey = StoreKey.of(list)
        if let id = try db.first("SELECT id FROM zone_orders WHERE list = ? AND field = ?", [.text(listKey), .text(field)], { $0.int64(0) }) {
            return id
        }
        let others = try db.scalarInt("SELECT count(*) FROM zone_orders WHERE list = ? AND field != '$key'", [.text(listKey)]) ?? 0
        guard field == "$key" || others < ZoneOrders.maxOrdersPerList - 1 else {
            return nil
        }
        try db.run("INSERT INTO zone_orders(list, field) VALUES (?, ?)", [.text(listKey), .text(field)])
        cache?.forget(listKey)
        guard let id = try db.first("SELECT id FROM zone_orders WHERE list = ? AND field = ?", [.text(listKey), .text(field)], { $0.int64(0) }) else {
            return nil
        }
        try build(id, list: list, field: field)
        return id
    }

    /// Whether `key` sorts among keys by its UTF-8 bytes exactly as Firebase orders keys: not a
    /// 32-bit integer (those come first, by number) and no scalar in U+E000-U+FFFF (UTF-16 order,
    /// Firebase's, puts those after the scalars above U+FFFF; byte order puts them before).
    static func sortsAsBytes(_ key: String) -> Bool {
        guard FirebaseOrder.integerKey(key) == nil else { return false }
        // The scalars U+E000-U+FFFF are exactly those whose UTF-8 starts with EE or EF (no
        // other byte of valid UTF-8 is either): a pass over the bytes, not a decoding of scalars.
        var key = key
        return key.withUTF8 { bytes in !bytes.contains { $0 == 0xEE || $0 == 0xEF } }
    }

    /// Called as a zone of a zone list is created: a key that does not sort as its bytes declares
    /// the list's key ordering (built from the zones already there), so that a list without one
    /// is read in key order from `zones` itself (`keysByZone`).
    /// `root` is the new zone's root; its key is looked at before its list's path is built, as
    /// nearly every key sorts as its bytes.
    func zoneCreated(root: Path) throws {
        guard let key = root.key, !ZoneOrders.sortsAsBytes(key), let list = root.parent, ZoneOrders.isZoneList(list) else { return }
        try declareKeyOrder(list: list)
    }

    /// Declares the key ordering of a zone list when the list has none yet, building it from the
    /// zones already there.
    func declareKeyOrder(list: Path) throws {
        let listKey = StoreKey.of(list)
        if let known = cache?.orders(of: listKey), known.contains(where: { $0.field == "$key" }) { return }
        let statement = try db.cachedStatement("INSERT OR IGNORE INTO zone_orders(list, field) VALUES (?, '$key')")
        defer { statement.reset(); statement.clearBindings() }
        try statement.bind(.text(listKey), at: 1)
        while try statement.step() {}
        cache?.forget(listKey)
        guard db.changes == 1 else { return }
        try build(db.lastInsertRowID, list: list, field: "$key")
    }

    /// Fills an ordering's rows from the zones of its list, one zone at a time (their values are
    /// read only when the ordering needs them).
    func build(_ id: Int64, list: Path, field: String) throws {
        let (low, high) = StoreKey.descendants(StoreKey.of(list))
        var rows: [(SQLValue, SQLValue)] = []
        let byKey = field == "$key"
        try db.query("SELECT zone, \(ZoneStore.valueColumns) FROM zones WHERE zone >= ? AND zone < ? AND value IS NOT NULL",
                     [.text(low), .text(high)]) { row in
            let zonePath = try StoreKey.path(row.text(0))
            guard zonePath.depth == list.depth + 1, let key = zonePath.key else { return }
            let value = byKey ? JSONValue.null : try ZoneStore.storedValue(row, column: 1, zone: Zone.of(zonePath))
            rows.append((.blob(ZoneOrders.encodedValue(value, field: field)), .blob(OrderKey.key(key))))
            if rows.count >= 256 { try insert(id, &rows) }
        }
        try insert(id, &rows)
    }

    private func insert(_ id: Int64, _ rows: inout [(SQLValue, SQLValue)]) throws {
        for (value, key) in rows {
            try db.run("INSERT OR REPLACE INTO zone_order_rows(ord, value, key) VALUES (?, ?, ?)", [.integer(id), value, key])
        }
        rows.removeAll(keepingCapacity: true)
    }

    // MARK: Answering queries

    /// The keys of the children a key-ordered query of `list` keeps, in the query's order, read
    /// from the zones' own index; nil when that would not be exact: the list has a key ordering
    /// (a key that does not sort as its bytes), or a bound is not text that sorts as its bytes
    /// (such queries are answered from the list's rows, declared for them).
    func keysByZone(list: Path, query: FirebaseQuery) throws -> [String]? {
        guard case .key = query.order, try declared(list: StoreKey.of(list)).allSatisfy({ $0.field != "$key" }) else { return nil }
        let prefix = StoreKey.of(list) + String(StoreKey.separator)
        func zoneKey(_ bound: JSONValue) -> String? {
            guard case .string(let key) = bound, ZoneOrders.sortsAsBytes(key) else { return nil }
            return prefix + key
        }
        var conditions = ["zone > ?", "zone < ?", "value IS NOT NULL"]
        var values: [SQLValue] = [.text(prefix), .text(StoreKey.descendants(StoreKey.of(list)).1)]
        for (bound, comparison) in [(query.equalTo, "="), (query.startAt, ">="), (query.endAt, "<=")] {
            guard let bound else { continue }
            guard let zone = zoneKey(bound) else { return nil }
            conditions.append("zone \(comparison) ?")
            values.append(.text(zone))
        }
        let (direction, limit) = ZoneOrders.scan(query.limit)
        if limit == 0 { return [] }
        let keys = try db.all("SELECT zone FROM zones WHERE \(conditions.joined(separator: " AND ")) ORDER BY zone\(direction) LIMIT \(limit)", values) {
            String(decoding: $0.text(0).utf8.dropFirst(prefix.utf8.count), as: UTF8.self)
        }
        return direction.isEmpty ? keys : keys.reversed()
    }

    /// How a range scan takes a query's limit: the SQL direction (" DESC" from the last end, whose
    /// keys the caller then reverses) and the row count (-1 for no limit).
    static func scan(_ limit: FirebaseQuery.Limit?) -> (direction: String, limit: Int) {
        switch limit {
        case .first(let count)?: return ("", count)
        case .last(let count)?: return (" DESC", count)
        case nil: return ("", -1)
        }
    }

    /// The keys of the children the query keeps, in the query's order, read from ordering `id`.
    func keys(_ id: Int64, query: FirebaseQuery) throws -> [String] {
        let byKey: Bool
        if case .key = query.order { byKey = true } else { byKey = false }
        let column = byKey ? "key" : "value"
        func encode(_ bound: JSONValue) -> [UInt8] {
            if byKey, case .string(let key) = bound { return OrderKey.key(key) }
            return OrderKey.value(bound)
        }
        var conditions = ["ord = ?"]
        var values: [SQLValue] = [.integer(id)]
        if let equalTo = query.equalTo {
            conditions.append("\(column) = ?")
            values.append(.blob(encode(equalTo)))
        }
        if let startAt = query.startAt {
            conditions.append("\(column) >= ?")
            values.append(.blob(encode(startAt)))
        }
        if let endAt = query.endAt {
            conditions.append("\(column) <= ?")
            values.append(.blob(encode(endAt)))
        }
        let (direction, limit) = ZoneOrders.scan(query.limit)
        if limit == 0 { return [] }
        let sql = "SELECT key FROM zone_order_rows WHERE \(conditions.joined(separator: " AND "))"
            + " ORDER BY value\(direction), key\(direction) LIMIT \(limit)"
        var keys: [String] = []
        try db.query(sql, values) { row in
            guard let key = OrderKey.decodeKey(row.blob(0)) else { throw StoreError.corrupt(path: "zone_order_rows", reason: "an undecodable key") }
            keys.append(key)
        }
        return direction.isEmpty ? keys : keys.reversed()
    }
}
