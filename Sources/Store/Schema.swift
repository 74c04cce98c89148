import Crypto
import SQLite
import Tree
import Wire

/// The store's schema as numbered migrations (never edit a shipped one; add the next number).
///
/// - `records`: every validly signed record, by id; the set that sync reconciles.
/// - `leaves`: the open zone of the tree, one row per primitive value, keyed by path (see
///   `StoreKey`), so a subtree read is a range scan.
/// - `cuts`: per open-zone path, the newest write made exactly there (`ord`) and the newest
///   non-null one (`ord_set`); they decide which later-arriving, older writes are hidden.
/// - `zones`: each protected zone (a profile, a message) as one row: its owner and its value,
///   the fold of its owner's pairs. Zones are small, so folding them whole is cheap, and a
///   message is read and written as a single row. Migration 8 replaces its write orders by
///   `last_seq`, the arrival number of the record folded last.
/// - `zone_pairs`: the pairs written into zones, to fold again when an older pair arrives late
///   or a message changes owner. Migration 8 replaces it by `zone_records`, which names the
///   records only (the records hold the pairs).
/// - `chunks`, `manifests`, `files`: the blob store: chunks by hash (each stored once), the
///   manifests that list them, and the storage paths that name a manifest (last writer wins).
///   Migration 5 moves the chunks out of this file (`ChunkStore`) and drops `chunks` here.
/// - `sealed_file_keys`: the per-file keys that messages (`photoKey`) carry for sealed files;
/// - `file_refs`: storage paths that messages (`photoURL`) and profiles (`picture`) refer to;
///   their chunks are fetched eagerly.
/// - `meta`: small settings such as the hybrid logical clock.
/// - `zone_orders`, `zone_order_rows` (migration 7): order indexes of the locations whose children
///   are zones (`/users`, a conversation's messages), see `ZoneOrders`.
/// - `read_marks` (migration 9): the last message key the node's user has read in each
///   conversation, see `ConversationSummaries`.
/// - Migration 10: a zone whose value is its first record's root pair keeps an empty blob in
///   `value` instead (`ZoneStore.valueColumns`), and each message list has its key ordering.
/// - `pending_large_writes` (migration 11): large writes whose content is not all here yet.
/// - `sealed_file_keys` (migration 12): keys of sealed files named by private messages.
/// - `sealed_writes` (migration 13, keyed shorter by migration 16): the sealed writes by epoch,
///   author and clock, see `Store.indexSealedWrite`.
/// - `private_control` (migration 15): the key and leave records of each private conversation,
///   and whether this node's device key opens each key record (`Store.privateControlSchema`).
/// - `leaf_values` (migration 14): strings of the open zone longer than `LeafValue.outOfLineBytes`,
///   named by their `leaves` row (kind 4) by id.
/// - Migration 17: `records` is indexed by (clock, id) (`records_by_key`) instead of (id, clock),
///   and by id only for key records (`key_records_by_id`); `files` by manifest
///   (`files_by_manifest`), see `recordsByKey`.
/// - `users`, `users_fts`, `users_short`, `users_names` (migrations 2 and 3), `users_grams`
///   (migration 4): the users directory, see `UserDirectory`.
enum Schema {
    /// The migrations; `chunks` is where migration 5 moves the chunks to.
    static func migrator(chunks: ChunkStore) -> Migrator {
        // The migrator runs on the caller's thread, the store's, which owns both connections.
        nonisolated(unsafe) let chunks = chunks
        return Migrator(migrations + [
            Migration(version: 5, name: "chunks in a file of their own") { db in try moveChunks(from: db, to: chunks) },
        ] + laterMigrations)
    }

    /// Copies every chunk of the store's `chunks` table into the chunk pack and drops the table
    /// (a store without the table has nothing to move).
    ///
    /// The copy commits in the chunk index (durably, the pack synced before it) before the
    /// store's migration transaction drops the table, since the files do not commit together: a
    /// crash in between leaves the table in place and the migration runs again, skipping the
    /// chunks already copied.
    static func moveChunks(from db: Connection, to chunks: ChunkStore) throws {
        guard try db.scalarInt("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'chunks'") == 1 else { return }
        try chunks.db.transaction(.immediate) { try chunks.appendBlobs(of: db) }
        try db.execute("DROP TABLE chunks")
    }

    /// Migrations 1 to 4, which need nothing but the store's file.
    static let migrations = [
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
            CREATE TABLE leaves (
                path TEXT PRIMARY KEY,
                kind INTEGER NOT NULL,
                value ANY NOT NULL,
                ord BLOB NOT NULL
            ) STRICT, WITHOUT ROWID;
            CREATE TABLE cuts (
                path TEXT PRIMARY KEY,
                ord BLOB NOT NULL,
                ord_set BLOB
            ) STRICT, WITHOUT ROWID;
            CREATE TABLE zones (
                zone TEXT PRIMARY KEY,
                owner BLOB NOT NULL,
                first_ord BLOB NOT NULL,
                last_ord BLOB,
                value BLOB
            ) STRICT, WITHOUT ROWID;
            CREATE TABLE zone_pairs (
                zone TEXT NOT NULL,
                ord BLOB NOT NULL,
                path TEXT NOT NULL,
                author BLOB NOT NULL,
                value BLOB NOT NULL,
                PRIMARY KEY (zone, ord, path)
            ) STRICT, WITHOUT ROWID;
            CREATE TABLE chunks (
                id INTEGER PRIMARY KEY,
                hash BLOB NOT NULL UNIQUE,
                bytes BLOB NOT NULL
            ) STRICT;
            CREATE TABLE manifests (
                id BLOB PRIMARY KEY,
                blob BLOB NOT NULL,
                size INTEGER NOT NULL,
                type TEXT NOT NULL,
                chunk_size INTEGER NOT NULL,
                hashes BLOB NOT NULL
            ) STRICT;
            CREATE TABLE files (
                path TEXT PRIMARY KEY,
                manifest BLOB,
                ord BLOB NOT NULL,
                author BLOB NOT NULL
            ) STRICT;
            CREATE TABLE file_refs (
                path TEXT PRIMARY KEY
            ) STRICT;
            """),
        // The first directory, keyed by user id; migration 3 replaces it.
        Migration(version: 2, name: "users directory", sql: """
            CREATE TABLE users (
                uid TEXT PRIMARY KEY,
                first_name TEXT,
                last_name TEXT,
                email TEXT,
                platform TEXT,
                picture TEXT,
                folded TEXT NOT NULL,
                folded_email TEXT NOT NULL,
                name_sort INTEGER NOT NULL UNIQUE
            ) STRICT, WITHOUT ROWID;
            CREATE INDEX users_by_name ON users(folded, uid);
            CREATE VIRTUAL TABLE users_fts USING fts5(text, content='', columnsize=0, tokenize='trigram case_sensitive 1');
            CREATE VIRTUAL TABLE users_short USING fts5(grams, content='', columnsize=0, detail=none, tokenize='trigram case_sensitive 1');
            INSERT OR REPLACE INTO meta(key, value) VALUES ('directory_built', NOT EXISTS (SELECT 1 FROM records));
            """),
        Migration(version: 3, name: "users directory keyed by order label", sql: UserDirectory.schema),
        Migration(version: 4, name: "users directory trigram counts", sql: UserDirectory.gramsSchema),
    ]

    /// Migrations from 6 on, which come after the chunks moved out (migration 5).
    static let laterMigrations = [
        // Message ownership bound to the message key, and keys compared in NFC (Protocol.md
        // §5.1, §5.4): the tree is folded again from the records (`Store.rebuildTreeIfRequested`).
        Migration(version: 6, name: "tree folded again under the rules of message keys and NFC keys", sql: """
            INSERT OR REPLACE INTO meta(key, value) VALUES ('tree_rebuild', 1);
            """),
        // Order indexes of zone lists (`ZoneOrders`), declared by the first query that needs
        // one and kept with the zones from then on; the tree rebuild empties the rows and fills
        // them again as it folds the zones.
        Migration(version: 7, name: "order indexes of zone lists", sql: """
            CREATE TABLE zone_orders (
                id INTEGER PRIMARY KEY,
                list TEXT NOT NULL,
                field TEXT NOT NULL,
                UNIQUE (list, field)
            ) STRICT;
            CREATE TABLE zone_order_rows (
                ord INTEGER NOT NULL,
                value BLOB NOT NULL,
                key BLOB NOT NULL,
                PRIMARY KEY (ord, value, key)
            ) STRICT, WITHOUT ROWID;
            """),
        Migration(version: 8, name: "each message kept once beside its record") { db in try storeOnce(db) },
        // Where the node's user has read each conversation up to (`Store.markRead`): local state of
        // this node, never a record.
        Migration(version: 9, name: "read marks of conversations", sql: """
            CREATE TABLE read_marks (
                conversation TEXT PRIMARY KEY,
                key TEXT NOT NULL
            ) STRICT, WITHOUT ROWID;
            """),
        Migration(version: 10, name: "message values kept in their records, message lists ordered by key ahead of need") { db in
            try valuesInRecords(db)
        },
        // Large writes (record kind 4) stored before every chunk of their content is held: folded
        // once the chunks are here (`Store.applyCompletedLargeWrites`). A large write stored
        // before this migration was refused then (an unknown kind), so none is missing here.
        Migration(version: 11, name: "large writes waiting for their content", sql: """
            CREATE TABLE pending_large_writes (
                seq INTEGER PRIMARY KEY
            ) STRICT;
            """),
        // Keys of sealed files (photos of private conversations), from the messages that name
        // them: a path may be named by several messages, and only a key that opens it counts.
        Migration(version: 12, name: "keys of sealed files", sql: """
            CREATE TABLE IF NOT EXISTS sealed_file_keys (
                path TEXT NOT NULL,
                key BLOB NOT NULL,
                PRIMARY KEY (path, key)
            ) STRICT, WITHOUT ROWID;
            """),
        // Sealed writes by conversation, epoch, author and clock (`Store.indexSealedWrite`), so
        // that a membership change judges again only the writes it can change instead of
        // decoding every sealed write of every conversation.
        Migration(version: 13, name: "sealed writes by conversation") { db in
            try indexSealedWrites(db, schema: migration13SealedWrites) { record, body, seq in
                try db.run("INSERT OR IGNORE INTO sealed_writes(conversation, epoch, author, clock, seq) VALUES (?, ?, ?, ?, ?)",
                           [.text(body.conversation), .blob(body.epoch.bytes), .blob(record.author.bytes), .integer(Store.indexClock(record.clock)), .integer(seq)])
            }
        },
        // Long strings of the open zone kept out of the WITHOUT ROWID `leaves` (see `LeafValue`):
        // a `leaves` row of kind 4 names its `leaf_values` row, which goes with it (on a delete,
        // and on an INSERT OR REPLACE, which fires no delete trigger). Strings already stored
        // move out here.
        Migration(version: 14, name: "long leaf values kept out of line") { db in try longLeavesOutOfLine(db) },
        // Key and leave records by conversation (`Store.privateControlSchema`), so resolving one
        // conversation's membership reads its own records instead of scanning every record.
        Migration(version: 15, name: "key and leave records by conversation") { db in try indexControlRecords(db) },
        // The index of sealed writes keyed by 8 bytes of the epoch and of the author, without the
        // conversation (`Store.sealedWritesSchema`): written for every sealed write stored, its
        // rows shrink from some 105 bytes to some 35. Filled again from the records.
        Migration(version: 16, name: "sealed writes indexed by shorter keys") { db in
            try db.execute("DROP TABLE IF EXISTS sealed_writes")
            try indexSealedWrites(db, schema: Store.sealedWritesSchema) { record, body, seq in
                try Store.indexSealedWrite(record, body, seq: seq, in: db)
            }
        },
        Migration(version: 17, name: "records indexed by clock then id, files by manifest") { db in try recordsByKey(db) },
    ]

    /// The version the migrations bring a store to.
    static var latestVersion: Int { laterMigrations.last!.version }

    /// Migration 15: the index of key and leave records, filled from the records already held
    /// (every node keeps it). Every key record starts untried (`opens` NULL): its boxes are
    /// tried under the budget of `KeyTrialQueue` once a device key is given. Like migration 13
    /// it finds the table in place on a store whose version was set back by hand.
    static func indexControlRecords(_ db: Connection) throws {
        try db.execute(Store.privateControlSchema)
        try db.query("SELECT seq, bytes FROM records WHERE kind IN (?, ?)",
                     [.integer(Int64(RecordKind.groupKey.rawValue)), .integer(Int64(RecordKind.leave.rawValue))]) { row in
            guard let record = try? Record.decode(row.blob(1), verify: false) else { return }
            try Store.indexControlRecord(record, seq: row.int64(0), in: db)
        }
    }

    /// Migrations 13 and 16: the index of sealed writes (created by `schema`), filled from the
    /// records already held by `index` (every node keeps it, member or not: a node may be given
    /// a key later). Like migration 12 it finds the table in place on a store whose version was
    /// set back by hand, and fills it again without duplicates.
    static func indexSealedWrites(_ db: Connection, schema: String, index: (Record, SealedWriteBody, Int64) throws -> Void) throws {
        try db.execute(schema)
        try db.query("SELECT seq, bytes FROM records WHERE kind = ?", [.integer(Int64(RecordKind.sealedWrite.rawValue))]) { row in
            guard let record = try? Record.decode(row.blob(1), verify: false), case let .sealedWrite(body) = record.body else { return }
            try index(record, body, row.int64(0))
        }
    }

    /// The index as migration 13 made it (migration 16 replaces it).
    static let migration13SealedWrites = """
        CREATE TABLE IF NOT EXISTS sealed_writes (
            conversation TEXT NOT NULL,
            epoch BLOB NOT NULL,
            author BLOB NOT NULL,
            clock INTEGER NOT NULL,
            seq INTEGER NOT NULL,
            PRIMARY KEY (conversation, epoch, author, clock, seq)
        ) STRICT, WITHOUT ROWID;
        """

    /// Migration 14: creates `leaf_values` and its triggers, then moves every string leaf longer
    /// than `LeafValue.outOfLineBytes` there, a slice of paths at a time.
    static func longLeavesOutOfLine(_ db: Connection) throws {
        try db.execute("""
            CREATE TABLE IF NOT EXISTS leaf_values (
                id INTEGER PRIMARY KEY,
                value TEXT NOT NULL
            ) STRICT;
            CREATE TRIGGER IF NOT EXISTS leaf_values_replaced BEFORE INSERT ON leaves BEGIN
                DELETE FROM leaf_values WHERE id = (SELECT value FROM leaves WHERE path = new.path AND kind = 4);
            END;
            CREATE TRIGGER IF NOT EXISTS leaf_values_deleted AFTER DELETE ON leaves WHEN old.kind = 4 BEGIN
                DELETE FROM leaf_values WHERE id = old.value;
            END;
            """)
        var after = ""
        while true {
            let paths = try db.all("""
                SELECT path FROM leaves WHERE path > ? AND kind = 3 AND length(CAST(value AS BLOB)) > ? ORDER BY path LIMIT 256
                """, [.text(after), .integer(Int64(LeafValue.outOfLineBytes))]) { $0.text(0) }
            guard let last = paths.last else { break }
            after = last
            for path in paths {
                try db.run("INSERT INTO leaf_values(value) SELECT value FROM leaves WHERE path = ?", [.text(path)])
                try db.run("UPDATE leaves SET kind = 4, value = ? WHERE path = ?", [.integer(db.lastInsertRowID), .text(path)])
            }
        }
    }

    /// Migration 10 brings a store to what ingest now writes:
    /// - a zone whose value is exactly its first record's only pair, at the zone's root, keeps the
    ///   empty marker instead of the value (`ZoneStore.valueColumns`); nothing else changes, so
    ///   the tree reads the same;
    /// - every message list has its key ordering (`ZoneOrders.declareKeyOrder`), so that no
    ///   first query of a conversation builds it;
    /// - file references are kept in NFC (`ZoneStore.noteReferences`).
    ///
    /// Zones are read a slice at a time in key order, so memory does not grow with the store.
    static func valuesInRecords(_ db: Connection) throws {
        let orders = ZoneOrders(db: db)
        var after = ""
        while true {
            var slice = [(key: String, value: [UInt8], record: [UInt8]?, firstSeq: Bool)]()
            try db.query("""
                SELECT zone, value, (SELECT bytes FROM records WHERE seq = zones.first_seq), first_seq IS NOT NULL
                FROM zones WHERE zone > ? ORDER BY zone LIMIT 2048
                """, [.text(after)]) { row in
                slice.append((row.text(0), row.isNull(1) ? [] : row.blob(1), row.isNull(2) ? nil : row.blob(2), row.int64(3) != 0))
            }
            guard let last = slice.last else { break }
            after = last.key
            var lists = Set<Path>()
            for row in slice {
                guard let path = try? StoreKey.path(row.key) else { continue }
                let zone = Zone.of(path)
                if case .message = zone, let list = zone.root.parent { lists.insert(list) }
                guard row.firstSeq, !row.value.isEmpty, let bytes = row.record,
                      let record = try? Record.decode(bytes, verify: false), case let .write(pairs) = record.body,
                      pairs.count == 1, let pair = pairs.first(where: { $0.path == zone.root }),
                      TreeValueCodec.encode(pair.value).encoded() == row.value else { continue }
                try db.run("UPDATE zones SET value = X'' WHERE zone = ?", [.text(row.key)])
            }
            for list in lists { try orders.declareKeyOrder(list: list) }
        }
        let refs = try db.all("SELECT path FROM file_refs") { $0.text(0) }
        for path in refs where FileEntry.canonicalPath(path) != path {
            try db.run("DELETE FROM file_refs WHERE path = ?", [.text(path)])
            try db.run("INSERT OR IGNORE INTO file_refs(path) VALUES (?)", [.text(FileEntry.canonicalPath(path))])
        }
    }

    /// Migration 8: a message or profile was kept three times (the record, the zone's folded
    /// value, and each pair again in `zone_pairs`, with two 72-byte write orders per zone). Now a
    /// zone keeps its value, the arrival number of the record that made it (`first_seq`) and of the
    /// record folded last (`last_seq`, whose write order is read from `records` when needed),
    /// and `zone_records` names the other records that wrote into each zone, decoded only to
    /// fold a zone again (a late older pair, or a change of owner, both rare). A message
    /// written once, nearly all of them, has no row there. (Zones migrated from
    /// `zone_pairs` have no `first_seq`: all their records are in `zone_records`.)
    ///
    /// `records` loses `author` (nothing reads it; the bytes hold it), and its index by id
    /// holds the clock too (`records_by_id`), so a node loads its record set for
    /// reconciliation from the index alone at start-up instead of reading every record. An id
    /// is the hash of bytes that hold the clock, so (id, clock) is unique exactly when id is.
    /// The tree does not change, so nothing is folded again.
    static func storeOnce(_ db: Connection) throws {
        // Each step checks for the layout it replaces, so a file already (partly) in the new
        // layout, such as one whose version was set back by hand, is left as it is.
        func columns(_ table: String) throws -> Set<String> {
            Set(try db.all("SELECT name FROM pragma_table_info(?)", [.text(table)]) { $0.text(0) })
        }
        if try columns("zones").contains("last_ord") {
            try db.execute("""
                CREATE TABLE zones_by_seq (
                    zone TEXT PRIMARY KEY,
                    owner BLOB NOT NULL,
                    first_seq INTEGER,
                    last_seq INTEGER,
                    value BLOB
                ) STRICT, WITHOUT ROWID;
                INSERT INTO zones_by_seq(zone, owner, last_seq, value)
                    SELECT zone, owner, (SELECT seq FROM records WHERE id = substr(last_ord, 41, 32)), value FROM zones;
                DROP TABLE zones;
                ALTER TABLE zones_by_seq RENAME TO zones;
                """)
        }
        if try !columns("zone_pairs").isEmpty {
            try db.execute("""
                CREATE TABLE zone_records (
                    zone TEXT NOT NULL,
                    seq INTEGER NOT NULL,
                    PRIMARY KEY (zone, seq)
                ) STRICT, WITHOUT ROWID;
                INSERT OR IGNORE INTO zone_records(zone, seq)
                    SELECT zone_pairs.zone, records.seq FROM zone_pairs JOIN records ON records.id = substr(zone_pairs.ord, 41, 32);
                DROP TABLE zone_pairs;
                """)
        }
        if try columns("records").contains("author") {
            try db.execute("""
                CREATE TABLE records_by_seq (
                    seq INTEGER PRIMARY KEY,
                    id BLOB NOT NULL,
                    clock INTEGER NOT NULL,
                    kind INTEGER NOT NULL,
                    bytes BLOB NOT NULL
                ) STRICT;
                INSERT INTO records_by_seq(seq, id, clock, kind, bytes) SELECT seq, id, clock, kind, bytes FROM records ORDER BY seq;
                DROP TABLE records;
                ALTER TABLE records_by_seq RENAME TO records;
                CREATE UNIQUE INDEX records_by_id ON records(id, clock);
                """)
        }
    }

    /// Migration 17: the unique index of `records` leads with the clock instead of the id.
    ///
    /// Why: an id is a hash, so each new record landed at a random place in an index by id, and
    /// a transaction of a few thousand records dirtied nearly one page of that index per record
    /// once the index outgrew them (some 14,000 pages at a million records): every commit wrote
    /// that many pages to the WAL and every checkpoint wrote them again, so a cold sync slowed
    /// as the store grew. Clocks follow time, and records arrive mostly in clock order (live
    /// writes are the newest; a cold sync is served in reconciliation order, clock first), so
    /// new keys land at the index's end and a transaction dirties a few pages of it.
    ///
    /// (clock, id) is unique exactly when id is, since the id is the hash of bytes that hold the
    /// clock. A lookup by id alone gives the clock too: the node's record set knows it (`RecordSet`),
    /// an incoming record holds it. The one lookup with no clock at hand, whether the key record
    /// a sealed live value names is held (`Store.openLive`), has a small index of its own, of key
    /// records only. The index still covers (clock, id) and the arrival number, so the record set
    /// is loaded from the index alone, now already in order.
    ///
    /// `files` gets an index by manifest: each manifest stored looked for the files naming it
    /// (`BlobStore.addManifest`, `Store.filePaths(touchedBy:)`) by reading the whole table, so
    /// a cold sync of a year with twenty thousand photos spent most of its storing time there
    /// by the end.
    static func recordsByKey(_ db: Connection) throws {
        try db.execute("""
            DROP INDEX IF EXISTS records_by_id;
            CREATE UNIQUE INDEX IF NOT EXISTS records_by_key ON records(clock, id);
            CREATE INDEX IF NOT EXISTS key_records_by_id ON records(id) WHERE kind = \(RecordKind.groupKey.rawValue);
            CREATE INDEX IF NOT EXISTS files_by_manifest ON files(manifest) WHERE manifest IS NOT NULL;
            """)
    }
}
