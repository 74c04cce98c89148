import Crypto
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

    /// The encodings of the held records among `keys` (clock and id), in their order. One
    /// statement, fetched once and stepped per key, in one read transaction (else each step
    /// locks and checks the WAL on its own): answering a peer's `want` reads thousands of
    /// records in a row.
    public func records(withKeys keys: [(clock: UInt64, id: Digest32)]) throws -> [[UInt8]] {
        try readTransaction {
            var out = [[UInt8]]()
            out.reserveCapacity(keys.count)
            let statement = try db.cachedStatement("SELECT bytes FROM records WHERE clock = ? AND id = ?")
            defer { statement.reset(); statement.clearBindings() }
            for key in keys {
                statement.reset()
                try statement.bind(.integer(Int64(bitPattern: key.clock)), at: 1)
                try key.id.withUnsafeBytes { try statement.bind(rawBlob: $0, at: 2) }
                if try statement.step() { out.append(statement.blob(0)) }
            }
            return out
        }
    }

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
