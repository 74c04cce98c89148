import Crypto
import SQLite
import Wire

/// Reads of the record set that sync needs.
extension Store {
    /// Every record as (clock, id), in no particular order; the node sorts them once.
    public func recordKeys() throws -> [(clock: UInt64, id: [UInt8])] {
        try db.all("SELECT clock, id FROM records") { (UInt64(bitPattern: $0.int64(0)), $0.blob(1)) }
    }

    /// The encodings of the held records among `ids`. One statement, fetched once and stepped
    /// per id, in one read transaction (else each step locks and checks the WAL on its own):
    /// answering a peer's `want` reads thousands of records in a row.
    public func records(withIDs ids: [Digest32]) throws -> [[UInt8]] {
        try readTransaction {
            var out = [[UInt8]]()
            out.reserveCapacity(ids.count)
            let statement = try db.cachedStatement("SELECT bytes FROM records WHERE id = ?")
            defer { statement.reset(); statement.clearBindings() }
            for id in ids {
                statement.reset()
                try statement.bind(.blob(id.bytes), at: 1)
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
