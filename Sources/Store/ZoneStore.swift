import Private
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
    /// The pairs of a sealed write as this node reads them (nil: none), for folds that read
    /// records again; writes of private conversations are kept only as ciphertext.
    var opener: ((Record) -> [WritePair]?)? = nil
    /// Calls its closure with each pair of a large write whose content took effect (held and
    /// valid), read a chunk at a time, and says whether it did (to fold a zone again from a
    /// large write's pairs).
    var largeWritePairs: ((LargeWrite, (WritePair) throws -> Void) throws -> Bool)? = nil
    /// The store's orderings already read (`ZoneOrderCache`).
    var orderCache: ZoneOrderCache? = nil

    /// Applies a pair written into `zone` by the record stored as arrival number `seq`.
    /// `encodedValue` gives the pair's value as the record carries it (canonical CBOR, what
    /// `TreeValueCodec.encode` would give), `order` the record's write-order key, and `authorID`
    /// is the author's user id, all worked out at most once per record by the caller, and the
    /// first two only when asked: a message written once needs neither. `inPlainRecord` says
    /// whether the record's own bytes hold the pair, so the zone may keep its value there
    /// (`PairFold.inPlainRecord`): no default, as a sealed or large write that claimed so would
    /// make its zone unreadable.
    func apply(_ pair: WritePair, encodedValue: () -> ArraySlice<UInt8>, zone: Zone, author: PublicKey, authorID: String,
               order: () -> [UInt8], seq: Int64, inPlainRecord: Bool) throws {
        // Someone else's pairs can never count in a profile, so they are not even kept.
        if case let .user(uid) = zone, uid != authorID { return }
        assert(Array(encodedValue()) == TreeValueCodec.encode(pair.value).encoded(), "a record's value bytes are not canonical")
        // A pair that breaks the senderId rule counts for nothing, not even as a claim, and no
        // fold ever reads it (a fold takes the owner's pairs that keep the rule), so it is not
        // noted either.
        guard ZoneStore.obeysRules(zone, pair: pair, authorID: authorID) else { return }
        // A zone's root is a prefix of its pairs' paths (`Zone.of`), so a pair at the root (nearly
        // every message) is the root: no second path is built for it, nor a relative one.
        let atRoot = Zone.isRoot(pair.path.segments)
        let root = atRoot ? pair.path : zone.root
        let zoneKey = StoreKey.of(root)
        let relative = atRoot ? Path.root : pair.path.relative(to: root) ?? .root
        // The value the pair alone gives the zone: what a new zone holds. At the root it is the
        // pair's own, built only when asked for: a message's value is held as its bytes
        // (`WritePair`), and a new message needs only a member or two of it. Below the root it
        // is worked out once here.
        let aloneBelowRoot = atRoot ? JSONValue.null : JSONValue.null.setting(relative, to: pair.value)
        func alone() -> JSONValue { atRoot ? pair.value : aloneBelowRoot }

        // The common case: the zone's first pair, which makes its author the owner. A pair at the
        // zone's root is the zone's whole value, which its record holds already: the row says so
        // (`inRecord`) instead of holding the value a second time. Not for a pair opened from a
        // sealed write (`inPlainRecord` false): its record holds only ciphertext.
        let firstValue: FirstValue
        if pair.isNull {
            firstValue = .none
        } else if atRoot && inPlainRecord {
            firstValue = .inRecord
        } else if atRoot {
            firstValue = .bytes(encodedValue())  // the zone's whole value: its encoding as given
        } else if case let .blob(bytes) = ZoneStore.encode(alone()) {
            firstValue = .bytes(bytes[...])
        } else {
            firstValue = .none
        }
        if try insertZone(zoneKey, owner: author.bytes, seq: seq, value: firstValue) {
            try orders.zoneCreated(root: root)
            try orders.zoneChanged(zone, old: .null, new: alone(), zoneKey: zoneKey)
            if atRoot { try noteReferences(zone, member: pair.member) } else { try noteReferences(zone, alone()) }
            return
        }
        // Every record but the zone's first (`first_seq`) is noted, for the folds to come.
        try insertReference(zone: zoneKey, seq: seq)

        guard let row = try db.first("SELECT owner, last_seq, \(ZoneStore.valueColumns) FROM zones WHERE zone = ?", [.text(zoneKey)], {
            ($0.blob(0), $0.isNull(1) ? nil : $0.int64(1), try ZoneStore.storedValue($0, column: 2, zone: zone))
        }) else { return }
        let (owner, lastSeq, current) = row
        guard author.bytes == owner else {
            if case let .message(_, key) = zone { try claim(zone, key: key, by: author, authorID: authorID, from: owner) }
            return
        }
        // Another pair of the record folded last extends the value too: a record's paths never
        // overlap, so its pairs fold alike in any order.
        if let lastSeq, lastSeq != seq, let lastOrder = try writeOrder(ofRecord: lastSeq, author: owner),
           !lastOrder.lexicographicallyPrecedes(order()) {
            try refold(zone)  // older than what the value already holds: fold again in order
            return
        }
        let next = current.setting(relative, to: pair.value)
        try db.run("UPDATE zones SET last_seq = ?, value = ? WHERE zone = ?", [.integer(seq), ZoneStore.encode(next), .text(zoneKey)])
        try orders.zoneChanged(zone, old: current, new: next, zoneKey: zoneKey)
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
    private func insertZone(_ zone: String, owner: [UInt8], seq: Int64, value: FirstValue) throws -> Bool {
        // The marker of a value kept in the record is a literal: an empty slice may bind as NULL.
        let statement = try db.cachedStatement(value.isInRecord
            ? "INSERT OR IGNORE INTO zones(zone, owner, first_seq, last_seq, value) VALUES (?, ?, ?, ?, X'')"
            : "INSERT OR IGNORE INTO zones(zone, owner, first_seq, last_seq, value) VALUES (?, ?, ?, ?, ?)")
        defer { statement.reset(); statement.clearBindings() }
        try statement.bind(.text(zone), at: 1)
        try statement.bind(.blob(owner), at: 2)
        try statement.bind(.integer(seq), at: 3)
        try statement.bind(.integer(seq), at: 4)
        if case let .bytes(bytes) = value { try statement.bind(blob: bytes, at: 5) }
        while try statement.step() {}
        return db.changes == 1
    }

    /// What a new zone row holds as its value.
    private enum FirstValue {
        case none
        /// The value of the zone's first record's pair at the zone's root (`inRecordMarker`).
        case inRecord
        case bytes(ArraySlice<UInt8>)

        var isInRecord: Bool { if case .inRecord = self { return true } else { return false } }
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
            case .sealedWrite:
                guard let opened = opener?(record) else { return }
                for pair in opened { take(pair) }
            case let .largeWrite(write):
                // Only a content that took effect (held and valid) has pairs to fold.
                _ = try largeWritePairs?(write) { pair in take(pair) }
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
    var orders: ZoneOrders { ZoneOrders(db: db, cache: orderCache) }

    /// The value of a zone, relative to its root (null when absent or empty).
    func value(of zone: Zone) throws -> JSONValue {
        try db.first("SELECT \(ZoneStore.valueColumns) FROM zones WHERE zone = ? AND value IS NOT NULL", [.text(StoreKey.of(zone))], {
            try ZoneStore.storedValue($0, column: 0, zone: zone)
        }) ?? .null
    }

    // MARK: Values kept in their record

    /// Two result columns that give a zone's value to `storedValue`: `value`, and the bytes of
    /// the zone's first record when `value` is the empty marker (in a query of `zones`).
    ///
    /// Why: nearly every message is written once, by a record of one pair at its root, and its
    /// value is then exactly that pair's value, which the record in `records` holds anyway (a
    /// record of several pairs is not used so: reading one value would decode them all). Keeping it a
    /// second time in `zones` made up most of that table, a third of the store. A zone whose
    /// value is its first record's root pair holds an empty blob instead (never a valid
    /// encoding, and not NULL, which means "no value"); any later change of the value writes it
    /// whole, as before.
    static let valueColumns = "value, CASE WHEN length(value) = 0 THEN (SELECT bytes FROM records WHERE seq = zones.first_seq) END"

    /// The zone's value from the two `valueColumns` starting at `column`; null when absent.
    static func storedValue(_ row: Row, column: Int32, zone: Zone) throws -> JSONValue {
        if row.isNull(column) { return .null }
        let bytes = row.blob(column)
        if !bytes.isEmpty { return try decode(bytes, zone: zone) }
        return try valueInRecord(row.isNull(column + 1) ? nil : row.blob(column + 1), zone: zone)
    }

    /// The value of the pair at the zone's root in a record's bytes. The record was verified when
    /// stored; bytes that no longer decode, or hold no such pair, are a damaged store.
    static func valueInRecord(_ bytes: [UInt8]?, zone: Zone) throws -> JSONValue {
        let root = zone.root
        guard let bytes, let record = try? Record.decode(bytes, verify: false), case let .write(pairs) = record.body,
              let pair = pairs.first(where: { $0.path == root }) else {
            throw StoreError.corrupt(path: StoreKey.of(zone), reason: "the record that holds this zone's value is missing or damaged")
        }
        return pair.value
    }

    /// `obeysRules` for a pair, reading only the member the rule needs of a value held as bytes
    /// (always an object at a message's root, `WritePair`).
    static func obeysRules(_ zone: Zone, pair: WritePair, authorID: String?) -> Bool {
        guard case .message = zone, pair.heldEncoding != nil, pair.path.segments.count == 4 else {
            return obeysRules(zone, path: pair.path, value: pair.value, authorID: authorID)
        }
        guard let authorID else { return false }
        return pair.member("senderId") == .string(authorID)
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
        try noteReferences(zone) { fields[$0] }
    }

    /// `noteReferences` of a value given by its members (`member` gives nil for a member it
    /// does not have, or for a value that is no object).
    func noteReferences(_ zone: Zone, member: (String) -> JSONValue?) throws {
        var url: String?
        switch zone {
        case .message: if case let .string(photo)? = member("photoURL") { url = photo }
        case .user: if case let .string(picture)? = member("picture") { url = picture }
        case .open: break
        }
        guard let url else { return }
        let path = Store.storagePath(fromURL: url) ?? url
        guard (try? FileEntry.validate(path: path)) != nil else { return }
        // Kept in NFC, the spelling files are stored under, so a file that arrives later finds
        // its references by path (`referencedIncompleteFiles(paths:)`).
        try db.run("INSERT OR IGNORE INTO file_refs(path) VALUES (?)", [.text(FileEntry.canonicalPath(path))])
        // A photo of a private conversation: its key, taken only from a message by the user the
        // path belongs to (the senderId rule makes senderId the author), so no other member can
        // name a key for someone else's photo.
        if case .message = zone, case let .string(text)? = member("photoKey"), let key = SealedFile.decodeKey(text),
           case let .string(sender)? = member("senderId"), StorageRules.owner(of: path) == sender {
            try db.run("INSERT OR IGNORE INTO sealed_file_keys(path, key) VALUES (?, ?)", [.text(FileEntry.canonicalPath(path)), .blob(key)])
        }
    }

    static func encode(_ value: JSONValue) -> SQLValue {
        value == .null ? .null : .blob(TreeValueCodec.encode(value).encoded())
    }

    static func decode(_ bytes: [UInt8], zone: Zone) throws -> JSONValue {
        try TreeValueCodec.decode(CBORDecoder.decode(bytes, limits: CBORLimits(maxDepth: 40, maxItems: 1_000_000)), at: zone.root)
    }
}
