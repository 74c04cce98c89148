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
        var pair = try StreamedOpenPair(db: db, path: path, order: order)
        try pair.insertLeaves(value, at: pair.key, isTop: true)
        // A value given whole says itself whether it is null (an empty object is not).
        try pair.finish(isSet: value != .null)
    }
}

/// One open-zone pair applied a leaf at a time, so that a pair read as a stream (a large
/// write's, Protocol.md §3.7) is never built whole; `Materializer.apply` walks a value through
/// it, so both fold alike.
///
/// The steps of a pair: if it is the newest write covering its path, older primitives at or
/// below the path go, and its leaves are inserted except where a newer write below covers them
/// (`newerCuts`) or made an object (`objectForced`); then, if the value had a leaf (it was not
/// null), older primitives above it go, since it turned them into objects; last, the write is
/// recorded at its path. Whether the value is null is known only once it is read (the zones
/// stripped from it may leave nothing), which is why the ancestors are cleared at the end: they
/// are strictly above every row the leaves touch, so the order does not change the result.
struct StreamedOpenPair {
    let db: Connection
    let path: Path
    /// The path's store key.
    let key: String
    let ord: SQLValue
    /// Whether no write at or above the path is newer: otherwise the pair is hidden entirely.
    let newest: Bool
    private var newerCuts = Set<String>()
    private var objectForced = Set<String>()
    private var leaves: LeafBatch
    /// Whether the value had a leaf so far, inserted or not.
    private(set) var hasLeaves = false

    init(db: Connection, path: Path, order: [UInt8]) throws {
        self.db = db
        self.path = path
        key = StoreKey.of(path)
        ord = .blob(order)
        leaves = LeafBatch(ord: ord)
        var newest = true
        for cover in path.ancestors + [path] {
            if let existing = try db.first("SELECT ord FROM cuts WHERE path = ?", [.text(StoreKey.of(cover))], { $0.blob(0) }),
               !existing.lexicographicallyPrecedes(order) {
                newest = false
                break
            }
        }
        self.newest = newest
        guard newest else { return }
        let (low, high) = StoreKey.descendants(key)
        // Older primitives at or below the path are replaced.
        try db.run("DELETE FROM leaves WHERE (path = ? OR (path >= ? AND path < ?)) AND ord < ?",
                   [.text(key), .text(low), .text(high), ord])
        // Newer writes below still hide parts of this value.
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
    }

    /// Whether a newer write below covers the subtree at `key` (a strict descendant's).
    func covers(_ key: String) -> Bool { newest && !newerCuts.isEmpty && newerCuts.contains(key) }

    /// Takes a primitive (not null) of the value at store key `key`; `covered` if a newer write
    /// covers it or a subtree above it (`covers`).
    mutating func leaf(_ value: JSONValue, at key: String, covered: Bool) throws {
        hasLeaves = true
        guard newest, !covered, !objectForced.contains(key) else { return }
        let (kind, stored) = try LeafValue.store(value, db)
        try leaves.add(key, kind, stored, db)
    }

    /// Takes a whole value at `key`.
    mutating func insertLeaves(_ value: JSONValue, at key: String, isTop: Bool, covered: Bool = false) throws {
        let covered = covered || (!isTop && covers(key))
        switch value {
        case .null:
            return
        case let .object(members):
            for (child, member) in members {
                try insertLeaves(member, at: key + String(StoreKey.separator) + child, isTop: false, covered: covered)
            }
        case .array:
            preconditionFailure("tree values hold no arrays")
        default:
            try leaf(value, at: key, covered: covered)
        }
    }

    /// Ends the pair: its leaves written, primitives above a non-null value turned into objects,
    /// and the write recorded at its path (the newest write there, and the newest non-null one).
    /// `isSet` says whether the value was not null, when known otherwise than by its leaves.
    mutating func finish(isSet: Bool? = nil) throws {
        try leaves.flush(db)
        let isSet = isSet ?? hasLeaves
        if isSet {
            // A non-null write turns every primitive above it into an object, if the primitive is older.
            for ancestor in path.ancestors {
                try db.run("DELETE FROM leaves WHERE path = ? AND ord < ?", [.text(StoreKey.of(ancestor)), ord])
            }
        }
        try db.run("""
            INSERT INTO cuts(path, ord, ord_set) VALUES (?, ?, ?)
            ON CONFLICT(path) DO UPDATE SET
                ord = max(ord, excluded.ord),
                ord_set = CASE WHEN excluded.ord_set IS NULL THEN ord_set
                               WHEN ord_set IS NULL THEN excluded.ord_set
                               ELSE max(ord_set, excluded.ord_set) END
            """, [.text(key), ord, isSet ? ord : .null])
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
