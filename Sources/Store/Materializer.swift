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
            let (kind, stored) = try LeafValue.store(value, db)
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

/// How a primitive is stored in `leaves`: a kind tag (1 bool, 2 number, 3 string, 4 string kept
/// out of line) and the value.
///
/// A string longer than `outOfLineBytes` is kept in `leaf_values` (migration 14), a rowid table,
/// and its `leaves` row holds only its id (kind 4). Why: `leaves` is WITHOUT ROWID, so a leaf's
/// value is part of its b-tree cell, and SQLite loads a whole cell that spills to overflow pages
/// for every key comparison a seek makes against it; each write beside a 10 MB string (a seek
/// that lands on its page, an `ord` read by a range delete) then read the 10 MB again. A rowid
/// table compares integer keys held in the cell and reads the value only when it is asked for.
/// Triggers of migration 14 drop a `leaf_values` row with the leaf that names it.
enum LeafValue {
    /// The longest string kept in its `leaves` row: below what a cell of a 4 KiB page holds
    /// without overflow pages (about 1000 bytes in an index b-tree), path included.
    static let outOfLineBytes = 512

    /// The `leaves` value column as readers want it: the string itself for kind 4.
    static let column = "CASE kind WHEN 4 THEN (SELECT value FROM leaf_values WHERE id = leaves.value) ELSE value END"

    static func encode(_ value: JSONValue) -> (Int64, SQLValue) {
        switch value {
        case let .bool(b): return (1, .integer(b ? 1 : 0))
        case let .number(d): return (2, .real(d))
        case let .string(s): return (3, .text(s))
        default: preconditionFailure("only primitives are stored as leaves")
        }
    }

    /// The kind and value a `leaves` row holds for `value`: a long string is first stored in
    /// `leaf_values` and named by its id.
    static func store(_ value: JSONValue, _ db: Connection) throws -> (Int64, SQLValue) {
        if case let .string(s) = value, s.utf8.count > outOfLineBytes {
            try db.run("INSERT INTO leaf_values(value) VALUES (?)", [.text(s)])
            return (4, .integer(db.lastInsertRowID))
        }
        return encode(value)
    }

    /// A value read as `kind` and `column` (the `column` expression for kind 4).
    static func decode(kind: Int64, row: Row, column: Int32) -> JSONValue {
        switch kind {
        case 1: return .bool(row.int64(column) != 0)
        case 2: return .number(row.double(column))
        default: return .string(row.text(column))
        }
    }
}
