import SQLite

/// The node's local memory of live state, in a file of its own beside the store
/// (`live.sqlite`): the read receipts it holds (signed, as received) and when it last saw each
/// user. Neither is history: both are replaced in place, never reconciled, and a lost file only
/// costs what peers send again. A file of its own keeps them out of the store's schema and its
/// migrations, which describe the record set and what is derived from it.
public final class LiveStore {
    let db: Connection

    /// Bounds the file: rows beyond them are not written (the table in memory is bounded the same way).
    public static let maxLastSeen = 65_536

    /// Opens (creating) the live-state file of the store at `storePath`; an in-memory store
    /// gets an in-memory one.
    public init(forStoreAt storePath: String) throws {
        let path = storePath.isEmpty || storePath.hasPrefix(":memory:") || storePath.hasPrefix("file::memory:")
            ? ":memory:" : LiveStore.path(forStoreAt: storePath)
        db = try Connection(path: path)
        try db.execute("""
            PRAGMA journal_mode = WAL;
            PRAGMA synchronous = NORMAL;
            CREATE TABLE IF NOT EXISTS receipts (path TEXT PRIMARY KEY, version INTEGER NOT NULL, signed BLOB NOT NULL) STRICT, WITHOUT ROWID;
            CREATE TABLE IF NOT EXISTS last_seen (user TEXT PRIMARY KEY, millis INTEGER NOT NULL) STRICT, WITHOUT ROWID;
            """)
    }

    public static func path(forStoreAt storePath: String) -> String {
        let directory = storePath.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/")
        return (directory.isEmpty ? "." : directory) + "/live.sqlite"
    }

    /// Every receipt kept, as signed (`LiveValue` encodings).
    public func receipts() throws -> [[UInt8]] {
        try db.all("SELECT signed FROM receipts") { $0.blob(0) }
    }

    /// Keeps `signed` as the receipt at `path`, replacing the one there.
    public func putReceipt(path: String, version: UInt64, signed: [UInt8]) throws {
        try db.run("INSERT OR REPLACE INTO receipts(path, version, signed) VALUES (?, ?, ?)",
                   [.text(path), .integer(Int64(bitPattern: version)), .blob(signed)])
    }

    public func deleteReceipt(path: String) throws {
        try db.run("DELETE FROM receipts WHERE path = ?", [.text(path)])
    }

    /// When each user was last seen, in wall-clock milliseconds.
    public func lastSeen() throws -> [String: Int64] {
        var out = [String: Int64]()
        for (user, millis) in try db.all("SELECT user, millis FROM last_seen", [], { ($0.text(0), $0.int64(1)) }) {
            out[user] = millis
        }
        return out
    }

    /// Records `seen` (user id -> milliseconds), in one transaction.
    public func putLastSeen(_ seen: [String: Int64]) throws {
        guard !seen.isEmpty else { return }
        try db.transaction {
            for (user, millis) in seen {
                try db.run("INSERT INTO last_seen(user, millis) VALUES (?, ?) ON CONFLICT(user) DO UPDATE SET millis = max(millis, excluded.millis)",
                           [.text(user), .integer(millis)])
            }
        }
    }
}
