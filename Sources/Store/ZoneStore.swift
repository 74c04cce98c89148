import Crypto
import SQLite
import Tree
import Wire

/// The protected zones (Protocol.md §5.4): each profile and each message is one row holding its
/// owner and its value, the fold of the owner's pairs in write order. Zones are small, so they
/// are folded whole in memory with the tree's own `setting`, the reference semantics; pairs
/// arriving in write order (nearly always) extend the stored value instead.
struct ZoneStore {
    let db: Connection

    /// Applies a pair written into `zone`. `encodedValue` is the pair's value as the record
    /// carries it (canonical CBOR, what `TreeValueCodec.encode` would give) and `authorID` the
    /// author's user id, both worked out once per record by the caller.
    func apply(_ pair: WritePair, encodedValue: ArraySlice<UInt8>, zone: Zone, author: PublicKey, authorID: String,
               order: [UInt8]) throws {
        // Someone else's pairs can never count in a profile, so they are not even kept.
        if case let .user(uid) = zone, uid != authorID { return }
        assert(Array(encodedValue) == TreeValueCodec.encode(pair.value).encoded(), "a record's value bytes are not canonical")
        let root = zone.root
        let zoneKey = StoreKey.of(root)
        let relative = pair.path.relative(to: root) ?? .root
        try insertPair(zone: zoneKey, order: order, path: StoreKey.of(relative), author: author.bytes, value: encodedValue)
        // A pair that breaks the senderId rule counts for nothing, not even as a claim.
        guard ZoneStore.obeysRules(zone, path: pair.path, value: pair.value, authorID: authorID) else { return }

        // The common case: the zone's first pair, which makes its author the owner. A pair at the
        // zone's root is the zone's whole value, already encoded.
        let firstValue: ArraySlice<UInt8>?
        if pair.value == .null {
            firstValue = nil
        } else if relative.isRoot {
            firstValue = encodedValue
        } else if case let .blob(bytes) = ZoneStore.encode(JSONValue.null.setting(relative, to: pair.value)) {
            firstValue = bytes[...]
        } else {
            firstValue = nil
        }
        if try insertZone(zoneKey, owner: author.bytes, order: order, value: firstValue) {
            let value = JSONValue.null.setting(relative, to: pair.value)
            try orders.zoneChanged(zone, old: .null, new: value)
            try noteReferences(zone, value)
            return
        }

        guard let row = try db.first("SELECT owner, last_ord, value FROM zones WHERE zone = ?", [.text(zoneKey)], {
            ($0.blob(0), $0.isNull(1) ? nil : $0.blob(1), $0.isNull(2) ? nil : $0.blob(2))
        }) else { return }
        let (owner, lastOrder, stored) = row
        guard author.bytes == owner else {
            if case let .message(_, key) = zone { try claim(zone, key: key, by: author, authorID: authorID, from: owner) }
            return
        }
        if let lastOrder, !lastOrder.lexicographicallyPrecedes(order) {
            try refold(zone)  // older than what the value already holds: fold again in order
            return
        }
        let current = try stored.map { try ZoneStore.decode($0, zone: zone) } ?? .null
        let next = current.setting(relative, to: pair.value)
        try db.run("UPDATE zones SET last_ord = ?, value = ? WHERE zone = ?", [.blob(order), ZoneStore.encode(next), .text(zoneKey)])
        try orders.zoneChanged(zone, old: current, new: next)
        try noteReferences(zone, next)
    }

    /// A second author's valid pair in a message zone (Protocol.md §5.4): the author bound by the
    /// message key owns it whoever wrote first; a key bound to the current owner stays theirs;
    /// otherwise two authors claim a key that binds neither, and the message is disputed (owner
    /// empty, no value) for good. None of it depends on clocks or arrival order.
    private func claim(_ zone: Zone, key: String, by author: PublicKey, authorID: String, from owner: [UInt8]) throws {
        let zoneKey = StoreKey.of(zone)
        if MessageKey.isBound(key, to: authorID) {
            try db.run("UPDATE zones SET owner = ? WHERE zone = ?", [.blob(author.bytes), .text(zoneKey)])
            try refold(zone)
            return
        }
        if let ownerID = (try? PublicKey(bytes: owner))?.userID, MessageKey.isBound(key, to: ownerID) { return }
        let old = try value(of: zone)
        try db.run("UPDATE zones SET owner = X'', last_ord = NULL, value = NULL WHERE zone = ?", [.text(zoneKey)])
        try orders.zoneChanged(zone, old: old, new: .null)
    }

    /// Keeps a pair (unless held): the hot insert of every ingest, bound directly on its
    /// cached statement rather than through an array of `SQLValue`s.
    private func insertPair(zone: String, order: [UInt8], path: String, author: [UInt8], value: ArraySlice<UInt8>) throws {
        let statement = try db.cachedStatement("INSERT OR IGNORE INTO zone_pairs(zone, ord, path, author, value) VALUES (?, ?, ?, ?, ?)")
        defer { statement.reset(); statement.clearBindings() }
        try statement.bind(.text(zone), at: 1)
        try statement.bind(.blob(order), at: 2)
        try statement.bind(.text(path), at: 3)
        try statement.bind(.blob(author), at: 4)
        try statement.bind(blob: value, at: 5)
        while try statement.step() {}
    }

    /// Creates the zone's row with this pair as its first (unless it exists); returns whether it
    /// was created. (`first_ord`, once what decided a message's owner, is only filled in: no
    /// rule reads it since ownership is bound to the message key.)
    private func insertZone(_ zone: String, owner: [UInt8], order: [UInt8], value: ArraySlice<UInt8>?) throws -> Bool {
        let statement = try db.cachedStatement("INSERT OR IGNORE INTO zones(zone, owner, first_ord, last_ord, value) VALUES (?, ?, ?, ?, ?)")
        defer { statement.reset(); statement.clearBindings() }
        try statement.bind(.text(zone), at: 1)
        try statement.bind(.blob(owner), at: 2)
        try statement.bind(.blob(order), at: 3)
        try statement.bind(.blob(order), at: 4)
        if let value { try statement.bind(blob: value, at: 5) }
        while try statement.step() {}
        return db.changes == 1
    }

    /// Folds a zone again from all its pairs: those of its owner that obey the rules, in write order.
    /// A disputed message (no owner) folds to nothing.
    func refold(_ zone: Zone) throws {
        let zoneKey = StoreKey.of(zone)
        guard let owner = try db.first("SELECT owner FROM zones WHERE zone = ?", [.text(zoneKey)], { $0.blob(0) }),
              !owner.isEmpty else { return }
        let root = zone.root
        let ownerID = (try? PublicKey(bytes: owner))?.userID
        let old = try self.value(of: zone)
        var value = JSONValue.null
        var last: [UInt8]?
        try db.query("SELECT path, value, ord FROM zone_pairs WHERE zone = ? AND author = ? ORDER BY ord", [.text(zoneKey), .blob(owner)]) { row in
            let relative = try StoreKey.path(row.text(0))
            let absolute = try root.appending(relative)
            let pairValue = try TreeValueCodec.decode(CBORDecoder.decode(row.blob(1)), at: absolute)
            guard ZoneStore.obeysRules(zone, path: absolute, value: pairValue, authorID: ownerID) else { return }
            value = value.setting(relative, to: pairValue)
            last = row.blob(2)
        }
        try db.run("UPDATE zones SET last_ord = ?, value = ? WHERE zone = ?",
                   [last.map(SQLValue.blob) ?? .null, ZoneStore.encode(value), .text(zoneKey)])
        try orders.zoneChanged(zone, old: old, new: value)
        try noteReferences(zone, value)
    }

    /// The order indexes of zone lists, kept with the zones' values.
    var orders: ZoneOrders { ZoneOrders(db: db) }

    /// The value of a zone, relative to its root (null when absent or empty).
    func value(of zone: Zone) throws -> JSONValue {
        guard let bytes = try db.first("SELECT value FROM zones WHERE zone = ? AND value IS NOT NULL", [.text(StoreKey.of(zone))], {
            $0.blob(0)
        }) else { return .null }
        return try ZoneStore.decode(bytes, zone: zone)
    }

    /// The senderId rule of messages (the owner check is the caller's), for an author's user id;
    /// nil (an author that is not a valid key) obeys no message rule.
    static func obeysRules(_ zone: Zone, path: Path, value: JSONValue, authorID: String?) -> Bool {
        guard case .message = zone else { return true }
        guard let authorID else { return false }
        return Zone.keepsSenderID(path: path, value: value, author: authorID)
    }

    /// Notes the storage paths a zone's value refers to (a message's `photoURL`, a profile's
    /// `picture`), whose files are then fetched eagerly.
    func noteReferences(_ zone: Zone, _ value: JSONValue) throws {
        guard case let .object(fields) = value else { return }
        var url: String?
        switch zone {
        case .message: if case let .string(photo)? = fields["photoURL"] { url = photo }
        case .user: if case let .string(picture)? = fields["picture"] { url = picture }
        case .open: break
        }
        guard let url else { return }
        let path = Store.storagePath(fromURL: url) ?? url
        guard (try? FileEntry.validate(path: path)) != nil else { return }
        try db.run("INSERT OR IGNORE INTO file_refs(path) VALUES (?)", [.text(path)])
    }

    static func encode(_ value: JSONValue) -> SQLValue {
        value == .null ? .null : .blob(TreeValueCodec.encode(value).encoded())
    }

    static func decode(_ bytes: [UInt8], zone: Zone) throws -> JSONValue {
        try TreeValueCodec.decode(CBORDecoder.decode(bytes, limits: CBORLimits(maxDepth: 40, maxItems: 1_000_000)), at: zone.root)
    }
}
