import Crypto
import SQLite
import Tree
import Wire

/// Keeps the open zone's `leaves` and `cuts` equal to the fold, in write order, of every open
/// pair (Protocol.md §5.3), while touching only the subtree of the pair being applied. Pairs
/// may arrive in any order; the result depends only on the set.
///
/// Facts the algorithm rests on, for a primitive at path L:
/// - its value comes from the newest pair written at L or an ancestor of L (the *cover*);
/// - it exists only if no non-null pair strictly below L is newer than the cover, since such a
///   pair turned L into an object at its turn in the fold, for good.
struct Materializer {
    let db: Connection

    /// Applies one open-zone pair (its value already stripped of zone content) with write-order
    /// key `order`.
    func apply(path: Path, value: JSONValue, order: [UInt8]) throws {
        let key = StoreKey.of(path)
        let ord = SQLValue.blob(order)
        let ancestors = path.ancestors

        // A non-null write turns every primitive above it into an object, if the primitive is older.
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
            try db.run("DELETE FROM leaves WHERE (path = ? OR (path >= ? AND path < ?)) AND ord < ?",
                       [.text(key), .text(low), .text(high), ord])
            // Newer writes below still hide parts of this value.
            var newerCuts = Set<String>()
            var objectForced = Set<String>()
            try db.query("SELECT path, ord_set FROM cuts WHERE path >= ? AND path < ? AND ord > ?",
                         [.text(low), .text(high), ord]) { row in
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
            var leaves = LeafBatch(ord: ord)
            try insertLeaves(value, at: key, isTop: true, into: &leaves, newerCuts: newerCuts, objectForced: objectForced)
            try leaves.flush(db)
        }

        // Record this write at its path: the newest write there, and the newest non-null one.
        try db.run("""
            INSERT INTO cuts(path, ord, ord_set) VALUES (?, ?, ?)
            ON CONFLICT(path) DO UPDATE SET
                ord = max(ord, excluded.ord),
                ord_set = CASE WHEN excluded.ord_set IS NULL THEN ord_set
                               WHEN ord_set IS NULL THEN excluded.ord_set
                               ELSE max(ord_set, excluded.ord_set) END
            """, [.text(key), ord, value == .null ? .null : ord])
    }

    private func insertLeaves(_ value: JSONValue, at key: String, isTop: Bool, into leaves: inout LeafBatch,
                              newerCuts: Set<String>, objectForced: Set<String>) throws {
        if !isTop && newerCuts.contains(key) { return }  // a newer write covers this subtree
        switch value {
        case .null:
            return
        case let .object(members):
            for (child, member) in members {
                try insertLeaves(member, at: key + String(StoreKey.separator) + child, isTop: false, into: &leaves,
                                 newerCuts: newerCuts, objectForced: objectForced)
            }
        case .array:
            preconditionFailure("tree values hold no arrays")
        default:
            if objectForced.contains(key) { return }
            let (kind, stored) = LeafValue.encode(value)
            try leaves.add(key, kind, stored, db)
        }
    }
}

/// Leaf rows of one pair, inserted several per statement (prepared once per row count).
struct LeafBatch {
    let ord: SQLValue
    private var values: [SQLValue] = []
    private var rows = 0
    static let maxRows = 16

    init(ord: SQLValue) { self.ord = ord }

    mutating func add(_ path: String, _ kind: Int64, _ value: SQLValue, _ db: Connection) throws {
        values += [.text(path), .integer(kind), value, ord]
        rows += 1
        if rows == LeafBatch.maxRows { try flush(db) }
    }

    mutating func flush(_ db: Connection) throws {
        guard rows > 0 else { return }
        let placeholders = Array(repeating: "(?, ?, ?, ?)", count: rows).joined(separator: ", ")
        try db.run("INSERT OR REPLACE INTO leaves(path, kind, value, ord) VALUES " + placeholders, values)
        values.removeAll(keepingCapacity: true)
        rows = 0
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
