import Crypto
import SQLite
import Tree
import Wire

/// Keeps `leaves` and `cuts` equal to the fold, in write order, of every effective pair (see
/// Protocol.md §5.2), while touching only the subtree of the pair being applied. Pairs may
/// arrive in any order; the result depends only on the set.
///
/// Facts the algorithm rests on, for a primitive at path L:
/// - its value comes from the newest pair written at L or an ancestor of L (the *cover*);
/// - it exists only if no non-null pair strictly below L is newer than the cover, since such a
///   pair turned L into an object at its turn in the fold, for good.
struct Materializer {
    let db: Connection

    /// Applies one effective pair written in `zone` with write-order key `order`.
    func apply(path: Path, value: JSONValue, order: [UInt8], zone: Zone) throws {
        let key = StoreKey.of(path)
        let zoneKey = StoreKey.of(zone)
        let zoneDepth = zone.root.segments.count
        let ancestors = path.ancestors.filter { $0.segments.count >= zoneDepth }
        let ord = SQLValue.blob(order)

        // A non-null write turns every primitive above it (in its zone) into an object, if the
        // primitive is older.
        if value != .null {
            for ancestor in ancestors {
                try db.run("DELETE FROM leaves WHERE path = ? AND ord < ?", [.text(StoreKey.of(ancestor)), ord])
            }
        }

        // Is this the newest write covering `path`? If an ancestor or the path itself was
        // written later, this pair is hidden entirely.
        var newest = true
        for cover in ancestors + [path] {
            if let existing = try db.first("SELECT ord FROM cuts WHERE path = ?", [.text(StoreKey.of(cover))], { $0.blob(0) }),
               !existing.lexicographicallyPrecedes(order) {
                newest = false
                break
            }
        }

        if newest {
            let (low, high) = StoreKey.descendants(key)
            // Older primitives at or below the path are replaced.
            try db.run("DELETE FROM leaves WHERE (path = ? OR (path >= ? AND path < ?)) AND zone = ? AND ord < ?",
                       [.text(key), .text(low), .text(high), .text(zoneKey), ord])
            // Newer writes below still hide parts of this value.
            var newerCuts = Set<String>()
            var objectForced = Set<String>()
            try db.query("SELECT path, ord_set FROM cuts WHERE path >= ? AND path < ? AND zone = ? AND ord > ?",
                         [.text(low), .text(high), .text(zoneKey), ord]) { row in
                let cutPath = row.text(0)
                newerCuts.insert(cutPath)
                if !row.isNull(1), order.lexicographicallyPrecedes(row.blob(1)) {
                    // Every strict ancestor of a newer non-null write is an object from then on.
                    var prefix = cutPath
                    while let slash = prefix.lastIndex(of: StoreKey.separator) {
                        prefix = String(prefix[..<slash])
                        if prefix.utf8.count < key.utf8.count { break }
                        objectForced.insert(prefix)
                    }
                }
            }
            try insertLeaves(value, at: key, isTop: true, zoneKey: zoneKey, ord: ord,
                             newerCuts: newerCuts, objectForced: objectForced)
        }

        // Record this write at its path.
        try db.run("""
            INSERT INTO cuts(path, zone, ord, ord_set) VALUES (?, ?, ?, ?)
            ON CONFLICT(path) DO UPDATE SET
                ord = max(ord, excluded.ord),
                ord_set = CASE WHEN excluded.ord_set IS NULL THEN ord_set
                               WHEN ord_set IS NULL THEN excluded.ord_set
                               ELSE max(ord_set, excluded.ord_set) END
            """, [.text(key), .text(zoneKey), ord, value == .null ? .null : ord])
    }

    private func insertLeaves(_ value: JSONValue, at key: String, isTop: Bool, zoneKey: String, ord: SQLValue,
                              newerCuts: Set<String>, objectForced: Set<String>) throws {
        if !isTop && newerCuts.contains(key) { return }  // a newer write covers this subtree
        switch value {
        case .null:
            return
        case let .object(members):
            for (child, member) in members {
                try insertLeaves(member, at: key + String(StoreKey.separator) + child, isTop: false, zoneKey: zoneKey, ord: ord,
                                 newerCuts: newerCuts, objectForced: objectForced)
            }
        case .array:
            preconditionFailure("tree values hold no arrays")
        default:
            if objectForced.contains(key) { return }
            let (kind, stored) = LeafValue.encode(value)
            try db.run("INSERT OR REPLACE INTO leaves(path, zone, kind, value, ord) VALUES (?, ?, ?, ?, ?)",
                       [.text(key), .text(zoneKey), .integer(kind), stored, ord])
        }
    }

    // MARK: Message zones

    /// Applies a pair written in a message zone. The message belongs to the author of its
    /// earliest pair; when a newly arrived pair is earlier and by someone else, ownership moves
    /// and the zone is recomputed from its pairs.
    func applyMessagePair(_ pair: WritePair, author: PublicKey, order: [UInt8]) throws {
        let zone = Zone.of(pair.path)
        let zoneKey = StoreKey.of(zone)
        try db.run("INSERT OR IGNORE INTO message_pairs(zone, ord, path, author, value) VALUES (?, ?, ?, ?, ?)", [
            .text(zoneKey), .blob(order), .text(StoreKey.of(pair.path)), .blob(author.bytes),
            .blob(TreeValueCodec.encode(pair.value).encoded()),
        ])
        let current = try db.first("SELECT owner, first_ord FROM message_owners WHERE zone = ?", [.text(zoneKey)]) {
            ($0.blob(0), $0.blob(1))
        }
        guard let (owner, firstOrder) = current else {
            try setOwner(zoneKey, author.bytes, order)
            try applyIfEffective(pair, author: author, order: order, zone: zone)
            return
        }
        if order.lexicographicallyPrecedes(firstOrder) {
            try setOwner(zoneKey, author.bytes, order)
            if owner != author.bytes {
                try recompute(zone)
                return
            }
        } else if owner != author.bytes {
            return
        }
        try applyIfEffective(pair, author: author, order: order, zone: zone)
    }

    private func setOwner(_ zoneKey: String, _ owner: [UInt8], _ order: [UInt8]) throws {
        try db.run("INSERT OR REPLACE INTO message_owners(zone, owner, first_ord) VALUES (?, ?, ?)",
                   [.text(zoneKey), .blob(owner), .blob(order)])
    }

    /// Applies a pair by the message's owner if it keeps `senderId` equal to its author.
    private func applyIfEffective(_ pair: WritePair, author: PublicKey, order: [UInt8], zone: Zone) throws {
        guard Zone.keepsSenderID(path: pair.path, value: pair.value, author: author.userID) else { return }
        try apply(path: pair.path, value: pair.value, order: order, zone: zone)
    }

    /// Rebuilds a message zone from scratch: clears its rows and re-applies its owner's pairs.
    private func recompute(_ zone: Zone) throws {
        let key = StoreKey.of(zone)
        let (low, high) = StoreKey.descendants(key)
        let range: [SQLValue] = [.text(key), .text(low), .text(high)]
        try db.run("DELETE FROM leaves WHERE path = ? OR (path >= ? AND path < ?)", range)
        try db.run("DELETE FROM cuts WHERE path = ? OR (path >= ? AND path < ?)", range)
        guard let owner = try db.first("SELECT owner FROM message_owners WHERE zone = ?", [.text(key)], { $0.blob(0) }) else { return }
        var pairs = [(WritePair, [UInt8])]()
        try db.query("SELECT path, value, ord FROM message_pairs WHERE zone = ? AND author = ? ORDER BY ord",
                     [.text(key), .blob(owner)]) { row in
            let path = try StoreKey.path(row.text(0))
            let value = try TreeValueCodec.decode(CBORDecoder.decode(row.blob(1)), at: path)
            pairs.append((WritePair(path: path, value: value), row.blob(2)))
        }
        let ownerKey = try PublicKey(bytes: owner)
        for (pair, order) in pairs {
            try applyIfEffective(pair, author: ownerKey, order: order, zone: zone)
        }
    }
}

/// How a primitive is stored in `leaves`: a kind tag (1 bool, 2 number, 3 string) and the value.
enum LeafValue {
    static func encode(_ value: JSONValue) -> (Int64, SQLValue) {
        switch value {
        case let .bool(b): return (1, .integer(b ? 1 : 0))
        case let .number(d): return (2, .real(d))
        case let .string(s): return (3, .text(s))
        default: preconditionFailure("only primitives are stored as leaves")
        }
    }

    static func decode(kind: Int64, row: Row, column: Int32) -> JSONValue {
        switch kind {
        case 1: return .bool(row.int64(column) != 0)
        case 2: return .number(row.double(column))
        default: return .string(row.text(column))
        }
    }
}
