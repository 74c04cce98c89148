import Crypto
import Glibc
import SQLite
import Wire

/// Reads of the record set that sync needs.
extension Store {
    /// Every record as (clock, id), in no particular order; the node sorts them once.
    public func recordKeys() throws -> [(clock: UInt64, id: [UInt8])] {
        var keys = [(clock: UInt64, id: [UInt8])]()
        try forEachRecordKey { clock, id in keys.append((clock, Array(id))) }
        return keys
    }

    /// Calls `body` with every record's clock and id (the bytes valid only during the call), in
    /// order of (clock, id). Read from the index on (clock, id), a tenth of the table's size,
    /// so a node with a million records loads its set in a fraction of a second.
    public func forEachRecordKey(_ body: (UInt64, UnsafeRawBufferPointer) throws -> Void) throws {
        try readTransaction {
            try db.query("SELECT clock, id FROM records INDEXED BY records_by_key") { row in
                try row.withBlob(1) { try body(UInt64(bitPattern: row.int64(0)), $0) }
            }
        }
    }

    /// Reads the record keys of this store's file through a connection of its own, so a node can
    /// load its record set on another thread while its queue (and its local API) goes on.
    public var recordKeyReader: RecordKeyReader { RecordKeyReader(path: path, vfs: disk.vfs) }

    /// Whether the record with this id and clock is held: one probe of the index on (clock, id).
    /// (A record's id is the hash of bytes holding its clock, so a wrong clock finds nothing.)
    public func hasRecord(_ id: Digest32, clock: UInt64) throws -> Bool {
        let statement = try db.cachedStatement("SELECT 1 FROM records WHERE clock = ? AND id = ?")
        defer { statement.reset(); statement.clearBindings() }
        try statement.bind(.integer(Int64(bitPattern: clock)), at: 1)
        try id.withUnsafeBytes { try statement.bind(rawBlob: $0, at: 2) }
        return try statement.step()
    }

    /// Whether a key record (kind 5) with this id is held, for a caller that knows no clock
    /// (its own small index, `key_records_by_id`).
    public func hasKeyRecord(_ id: Digest32) throws -> Bool {
        let statement = try db.cachedStatement("SELECT 1 FROM records WHERE id = ? AND kind = \(RecordKind.groupKey.rawValue)")
        defer { statement.reset(); statement.clearBindings() }
        try statement.bind(.blob(id.bytes), at: 1)
        return try statement.step()
    }

    /// The encodings of the held records among `keys` (clock and id), in their order, read in
    /// one read transaction (else each read locks and checks the WAL on its own).
    ///
    /// Answering a peer's `want` reads thousands of records in a row, and the keys a peer asks
    /// for in one message are mostly neighbours in the index (a new member asks for everything).
    /// So they are read in the index's order by one walk of it, seeking again only past a run
    /// of `recordWalkSkip` records not asked for: a probe per key cost two descents of the
    /// B-trees and a statement reset each, about half of what serving a record cost.
    public func records(withKeys keys: [(clock: UInt64, id: Digest32)]) throws -> [[UInt8]] {
        // The index orders clocks as SQLite integers (signed) and ids as bytes.
        func precedes(_ a: (clock: UInt64, id: Digest32), _ b: (clock: UInt64, id: Digest32)) -> Bool {
            let (x, y) = (Int64(bitPattern: a.clock), Int64(bitPattern: b.clock))
            if x != y { return x < y }
            return a.id.withUnsafeBytes { a in b.id.withUnsafeBytes { b in memcmp(a.baseAddress!, b.baseAddress!, 32) < 0 } }
        }
        let inOrder = zip(keys, keys.dropFirst()).allSatisfy { !precedes($1, $0) }
        let order = inOrder ? Array(keys.indices) : keys.indices.sorted { precedes(keys[$0], keys[$1]) }
        var found = [[UInt8]?](repeating: nil, count: keys.count)
        try readTransaction {
            let statement = try db.cachedStatement("SELECT clock, id, bytes FROM records INDEXED BY records_by_key WHERE (clock, id) >= (?, ?) ORDER BY clock, id")
            defer { statement.reset(); statement.clearBindings() }
            var next = 0
            walks: while next < order.count {
                statement.reset()
                let first = keys[order[next]]
                try statement.bind(.integer(Int64(bitPattern: first.clock)), at: 1)
                try first.id.withUnsafeBytes { try statement.bind(rawBlob: $0, at: 2) }
                var skipped = 0
                var hasRow = try statement.step()
                while hasRow, next < order.count {
                    let key = keys[order[next]]
                    let clock = statement.int64(0)
                    let sign = clock != Int64(bitPattern: key.clock) ? (clock < Int64(bitPattern: key.clock) ? -1 : 1)
                        : statement.withBlob(1) { row in
                            key.id.withUnsafeBytes { id in row.count == 32 ? Int(memcmp(row.baseAddress!, id.baseAddress!, 32).signum()) : -1 }
                        }
                    if sign == 0 {
                        found[order[next]] = statement.blob(2)
                        next += 1
                        skipped = 0
                        hasRow = try statement.step()
                    } else if sign > 0 {
                        next += 1  // not held
                    } else {
                        skipped += 1
                        if skipped > Store.recordWalkSkip { continue walks }
                        hasRow = try statement.step()
                    }
                }
                break  // past the last record, or every key read
            }
        }
        return found.compactMap { $0 }
    }

    /// Records not asked for that a walk of the index steps over before it seeks again: about
    /// what one seek costs in steps, so keys a peer spaces to defeat the walk cost at most about
    /// twice what probing each would.
    static let recordWalkSkip = 8

    /// Records stored after arrival number `sequence` (by this or another process), oldest first.
    public func records(after sequence: Int64, limit: Int = 10_000) throws -> [(sequence: Int64, id: [UInt8], bytes: [UInt8])] {
        try db.all("SELECT seq, id, bytes FROM records WHERE seq > ? ORDER BY seq LIMIT ?", [.integer(sequence), .integer(Int64(limit))]) {
            ($0.int64(0), $0.blob(1), $0.blob(2))
        }
    }

    /// The arrival number of the newest record (0 when empty).
    public func lastSequence() throws -> Int64 {
        try db.scalarInt("SELECT max(seq) FROM records") ?? 0
    }
}

/// The record keys of a store's file, read through a connection of its own (`Store.recordKeyReader`).
public struct RecordKeyReader: Sendable {
    let path: String
    let vfs: String?

    /// Calls `body` with the clock and id (the bytes valid only during the call) of every record
    /// stored as arrival number `sequence` or earlier, in order of (clock, id). The bound makes the
    /// answer the same whenever it is read: records stored later are the caller's to add (they
    /// arrive through the node, or are picked up after `sequence` as other processes' writes).
    /// Read from the index on (clock, id), which holds each row's arrival number too.
    public func forEachRecordKey(through sequence: Int64, _ body: (UInt64, UnsafeRawBufferPointer) throws -> Void) throws {
        do {
            let db = try Connection(path: path, create: false, vfs: vfs)
            // Through the memory map, as the store's own connection reads: the index's pages
            // are then the kernel's file cache, read in place rather than copied page by page.
            try db.execute("PRAGMA mmap_size = 2147418112")
            try db.transaction(.deferred) {
                try db.query("SELECT clock, id FROM records INDEXED BY records_by_key WHERE seq <= ?", [.integer(sequence)]) { row in
                    try row.withBlob(1) { try body(UInt64(bitPattern: row.int64(0)), $0) }
                }
            }
        } catch let error as SQLiteError {
            throw StoreError.from(error, path: path)
        }
    }
}
