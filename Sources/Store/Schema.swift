import SQLite

/// The store's schema as numbered migrations (never edit a shipped one; add the next number).
///
/// - `records`: every validly signed record, by id; the set that sync reconciles.
/// - `leaves`: the materialized tree, one row per primitive value, keyed by path storage key
///   ("/a/b"), so a subtree read is a range scan.
/// - `cuts`: per path, the newest write made exactly there (`ord`) and the newest non-null one
///   (`ord_set`); they decide which later-arriving, older writes are hidden.
/// - `message_pairs` / `message_owners`: every pair written into a message zone and who owns the
///   message, so a zone can be recomputed when an earlier write changes its owner.
/// - `meta`: small settings such as the hybrid logical clock.
enum Schema {
    static let migrator = Migrator([
        Migration(version: 1, name: "records and materialized tree", sql: """
            CREATE TABLE meta (
                key TEXT PRIMARY KEY,
                value ANY
            ) STRICT;
            CREATE TABLE records (
                seq INTEGER PRIMARY KEY,
                id BLOB NOT NULL UNIQUE,
                clock INTEGER NOT NULL,
                author BLOB NOT NULL,
                kind INTEGER NOT NULL,
                bytes BLOB NOT NULL
            ) STRICT;
            CREATE INDEX records_by_clock ON records(clock, id);
            CREATE TABLE leaves (
                path TEXT PRIMARY KEY,
                zone TEXT NOT NULL,
                kind INTEGER NOT NULL,
                value ANY NOT NULL,
                ord BLOB NOT NULL
            ) STRICT, WITHOUT ROWID;
            CREATE TABLE cuts (
                path TEXT PRIMARY KEY,
                zone TEXT NOT NULL,
                ord BLOB NOT NULL,
                ord_set BLOB
            ) STRICT, WITHOUT ROWID;
            CREATE TABLE message_pairs (
                zone TEXT NOT NULL,
                ord BLOB NOT NULL,
                path TEXT NOT NULL,
                author BLOB NOT NULL,
                value BLOB NOT NULL,
                PRIMARY KEY (zone, ord, path)
            ) STRICT, WITHOUT ROWID;
            CREATE TABLE message_owners (
                zone TEXT PRIMARY KEY,
                owner BLOB NOT NULL,
                first_ord BLOB NOT NULL
            ) STRICT, WITHOUT ROWID;
            """),
    ])
}
