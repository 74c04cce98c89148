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
    /// The content of a large write, when held (to fold a zone again from a large write's pairs).
    var largeWriteContent: ((LargeWrite) throws -> [UInt8]?)? = nil

    /// Applies a pair written into `zone` by the record stored as arrival number `seq`.
    /// `encodedValue` is the pair's value as the record carries it (canonical CBOR, what
    /// `TreeValueCodec.encode` would give) and `authorID` the author's user id, both worked out
    /// once per record by the caller.
    func apply(_ pair: WritePair, encodedValue: ArraySlice<UInt8>, zone: Zone, author: PublicKey, authorID: String,
               order: [UInt8], seq: Int64) throws {
        // Someone else's pairs can never count in a profile, so they are not even kept.
        if case let .user(uid) = zone, uid != authorID { return }
        assert(Array(encodedValue) == TreeValueCodec.encode(pair.value).encoded(), "a record's value bytes are not canonical")
        let root = zone.root
        let zoneKey = StoreKey.of(root)
        let relative = pair.path.relative(to: root) ?? .root
        // A pair that breaks the senderId rule counts for nothing, not even as a claim, and no
        // fold ever reads it (a fold takes the owner's pairs that keep the rule), so it is not
        // noted either.
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
        if try insertZone(zoneKey, owner: author.bytes, seq: seq, value: firstValue) {
            let value = JSONValue.null.setting(relative, to: pair.value)
            try orders.zoneChanged(zone, old: .null, new: value)
            try noteReferences(zone, value)
            return
        }
        // Every record but the zone's first (`first_seq`) is noted, for the folds to come.
        try insertReference(zone: zoneKey, seq: seq)

        guard let row = try db.first("SELECT owner, last_seq, value FROM zones WHERE zone = ?", [.text(zoneKey)], {
            ($0.blob(0), $0.isNull(1) ? nil : $0.int64(1), $0.isNull(2) ? nil : $0.blob(2))
        }) else { return }
        let (owner, lastSeq, stored) = row
        guard author.bytes == owner else {
            if case let .message(_, key) = zone { try claim(zone, key: key, by: author, authorID: authorID, from: owner) }
            return
        }
        // Another pair of the record folded last extends the value too: a record's paths never
        // overlap, so its pairs fold alike in any order.
        if let lastSeq, lastSeq != seq, let lastOrder = try writeOrder(ofRecord: lastSeq, author: owner),
           !lastOrder.lexicographicallyPrecedes(order) {
            try refold(zone)  // older than what the value already holds: fold again in order
            return
        }
        let current = try stored.map { try ZoneStore.decode($0, zone: zone) } ?? .null
        let next = current.setting(relative, to: pair.value)
        try db.run("UPDATE zones SET last_seq = ?, value = ? WHERE zone = ?", [.integer(seq), ZoneStore.encode(next), .text(zoneKey)])
        try orders.zoneChanged(zone, old: current, new: next)
        try noteReferences(zone, next)
    }

    /// The write-order key (`WriteOrder.key`) of the record stored as `seq`, written by `author`
    /// (the zone's owner, the author of every pair a zone's value folds), read from its row
    /// without decoding it.
    private func writeOrder(ofRecord seq: Int64, author: [UInt8]) throws -> [UInt8]? {
        let statement = try db.cachedStatement("SELECT clock, id FROM records WHERE seq = ?")
        defer { statement.reset(); statement.clearBindings() }
        try statement.bind(.integer(seq), at: 1)
        guard try statement.step() else { return nil }
        var key = [UInt8]()
        key.reserveCapacity(72)
        let clock = UInt64(bitPattern: statement.int64(0))
        for shift in stride(from: 56, through: 0, by: -8) { key.append(UInt8(truncatingIfNeeded: clock >> UInt64(shift))) }
        key += author
        key += statement.blob(1)
        return key
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
        try db.run("UPDATE zones SET owner = X'', last_seq = NULL, value = NULL WHERE zone = ?", [.text(zoneKey)])
        try orders.zoneChanged(zone, old: old, new: .null)
    }

    /// Notes that the record stored as `seq` writes into the zone (unless noted already), bound
    /// directly on its cached statement. Only the reference is kept, not the pair: the record
    /// holds it, and folding a zone again is rare. Most zones (a message written once) never
    /// need a row here: their one record is `zones.first_seq`.
    private func insertReference(zone: String, seq: Int64) throws {
        let statement = try db.cachedStatement("INSERT OR IGNORE INTO zone_records(zone, seq) VALUES (?, ?)")
        defer { statement.reset(); statement.clearBindings() }
        try statement.bind(.text(zone), at: 1)
        try statement.bind(.integer(seq), at: 2)
        while try statement.step() {}
    }

    /// Creates the zone's row with this pair as its first (unless it exists); returns whether it
    /// was created.
    private func insertZone(_ zone: String, owner: [UInt8], seq: Int64, value: ArraySlice<UInt8>?) throws -> Bool {
        let statement = try db.cachedStatement("INSERT OR IGNORE INTO zones(zone, owner, first_seq, last_seq, value) VALUES (?, ?, ?, ?, ?)")
        defer { statement.reset(); statement.clearBindings() }
        try statement.bind(.text(zone), at: 1)
        try statement.bind(.blob(owner), at: 2)
        try statement.bind(.integer(seq), at: 3)
        try statement.bind(.integer(seq), at: 4)
        if let value { try statement.bind(blob: value, at: 5) }
        while try statement.step() {}
        return db.changes == 1
    }

    /// Folds a zone again from all its pairs: those of its owner that obey the rules, in write
    /// order. The pairs are read from the records that `zones.first_seq` and `zone_records`
    /// name. A disputed message (no owner) folds to nothing.
    func refold(_ zone: Zone) throws {
        let zoneKey = StoreKey.of(zone)
        guard let owner = try db.first("SELECT owner FROM zones WHERE zone = ?", [.text(zoneKey)], { $0.blob(0) }),
              !owner.isEmpty else { return }
        let root = zone.root
        let ownerID = (try? PublicKey(bytes: owner))?.userID
        let old = try self.value(of: zone)
        var pairs = [(order: [UInt8], seq: Int64, relative: Path, value: JSONValue)]()
        try db.query("""
            SELECT seq, bytes FROM records WHERE seq IN (
                SELECT seq FROM zone_records WHERE zone = ?1 UNION SELECT first_seq FROM zones WHERE zone = ?1)
            """, [.text(zoneKey)]) { row in
            // Verified when stored; a record that no longer decodes takes no effect (TreeRebuild).
            guard let record = try? Record.decode(row.blob(1), verify: false), record.author.bytes == owner else { return }
            let order = record.order.key
            let seq = row.int64(0)
            func take(_ pair: WritePair) {
                guard let relative = pair.path.relative(to: root),
                      ZoneStore.obeysRules(zone, path: pair.path, value: pair.value, authorID: ownerID) else { return }
                pairs.append((order, seq, relative, pair.value))
            }
            switch record.body {
            case let .write(written):
                for pair in written { take(pair) }
            case let .largeWrite(write):
                // Only a content that took effect (held and valid) has pairs to fold.
                guard let content = try largeWriteContent?(write), (try? LargeWriteContent.validate(content[...])) != nil else { return }
                try LargeWriteContent.forEachPair(in: content[...], checked: true) { pair, _ in take(pair) }
            default:
                return
            }
        }
        pairs.sort { $0.order.lexicographicallyPrecedes($1.order) }
        var value = JSONValue.null
        for pair in pairs { value = value.setting(pair.relative, to: pair.value) }
        try db.run("UPDATE zones SET last_seq = ?, value = ? WHERE zone = ?",
                   [pairs.last.map { SQLValue.integer($0.seq) } ?? .null, ZoneStore.encode(value), .text(zoneKey)])
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
