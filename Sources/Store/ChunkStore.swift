import Crypto
import SQLite

/// The chunks: their bytes in an append-only file (`ChunkPack`, `store.chunks.pack`) and an
/// index of where each lies, by its BLAKE2b-256 hash, in an SQLite file of its own
/// (`store.chunks.sqlite`); both beside the store (`chunkPath(forStoreAt:)`).
///
/// Why files of their own: a chunk is 64 KiB and written once, while the store's records and
/// tree are small rows rewritten often. In the store's 4 KiB pages a chunk was 17 WAL frames,
/// copied again page by page by the checkpoint; as SQLite blobs in 64 KiB pages (the chunk
/// file's migration 1) it was still copied into a record, pages, the WAL and, at the checkpoint,
/// the file. Appended to the pack it is written once. The index commits separately from the
/// store, and nothing needs them to change together: a chunk is committed before any record
/// that names it (`putFile`), and a chunk no record names yet is harmless.
///
/// Appending: under the index's write lock (an IMMEDIATE transaction, which also keeps writers
/// in other processes out), the new chunks are written at the end the index records
/// (`pack_end`), synced, and then indexed in the same transaction. Bytes written by an append
/// that never committed (a crash, an error) lie past that end and are written over by the next
/// append, so a crash never leaves an index entry without its bytes nor makes a chunk visible
/// before it is durable.
struct ChunkStore {
    /// Page size of a new index file. Files made while chunks were blobs in it keep 64 KiB.
    static let pageSize = 4096

    /// The chunk index's own numbered migrations, kept in its own `user_version`.
    static func migrator(pack: ChunkPack) -> Migrator {
        // The migrator runs on the caller's thread, which owns the pack.
        nonisolated(unsafe) let pack = pack
        return Migrator([
            Migration(version: 1, name: "chunks", sql: """
                CREATE TABLE chunks (
                    id INTEGER PRIMARY KEY,
                    hash BLOB NOT NULL UNIQUE,
                    bytes BLOB NOT NULL
                ) STRICT;
                """),
            Migration(version: 2, name: "chunk bytes in the pack") { db in
                try db.execute("""
                    CREATE TABLE packed (
                        hash BLOB PRIMARY KEY,
                        offset INTEGER NOT NULL,
                        length INTEGER NOT NULL
                    ) STRICT, WITHOUT ROWID;
                    CREATE TABLE pack_end (
                        one INTEGER PRIMARY KEY CHECK (one = 1),
                        offset INTEGER NOT NULL
                    ) STRICT;
                    INSERT INTO pack_end(one, offset) VALUES (1, 0);
                    """)
                try moveBlobsToPack(db: db, pack: pack)
            },
        ])
    }

    /// Appends the chunks held as blobs (migration 1's table) to the pack and drops the table,
    /// a few MiB at a time; in the migration's transaction, so a crash leaves the blobs where
    /// they were and the migration runs again.
    static func moveBlobsToPack(db: Connection, pack: ChunkPack) throws {
        try ChunkStore(db: db, pack: pack).appendBlobs(of: db)
        try db.execute("DROP TABLE chunks")
    }

    /// Appends the chunks of the `chunks` table (hash, bytes) of `source`, which may be another
    /// database (an older store kept them in its own file), a few MiB per append (each append
    /// syncs). Call inside an IMMEDIATE transaction of `db`.
    func appendBlobs(of source: Connection) throws {
        var batch = [(hash: Digest32, bytes: ArraySlice<UInt8>)]()
        var size = 0
        try source.query("SELECT hash, bytes FROM chunks ORDER BY id") { row in
            let bytes = row.blob(1)
            batch.append((try Digest32(bytes: row.blob(0)), bytes[...]))
            size += bytes.count
            if size >= 16 << 20 {
                try append(batch)
                (batch, size) = ([], 0)
            }
        }
        try append(batch)
    }

    let db: Connection
    let pack: ChunkPack

    /// The chunk index for the store at `storePath`: `store.sqlite` keeps its chunks in
    /// `store.chunks.sqlite` and `store.chunks.pack`. An in-memory store has in-memory ones.
    static func chunkPath(forStoreAt storePath: String) -> String {
        if storePath.isEmpty || storePath.hasPrefix(":memory:") { return ":memory:" }
        return withoutSQLiteSuffix(storePath) + ".chunks.sqlite"
    }

    /// The pack beside the chunk index at `indexPath`.
    static func packPath(forIndexAt indexPath: String) -> String {
        if indexPath == ":memory:" { return indexPath }
        return withoutSQLiteSuffix(indexPath) + ".pack"
    }

    private static func withoutSQLiteSuffix(_ path: String) -> String {
        path.hasSuffix(".sqlite") ? String(path.dropLast(".sqlite".count)) : path
    }

    /// Opens (creating if needed) the chunk index at `path` and its pack, the index in WAL mode
    /// with `synchronous=FULL` (a stored file's chunks must be durable before its records are),
    /// and brings the index's schema up to date. The space the blobs took is given back once
    /// they have moved to the pack.
    static func open(path: String, disk: DiskAccess = .system) throws -> ChunkStore {
        let db = try Connection(path: path, vfs: disk.vfs)
        // Takes effect only while the file is empty, before WAL mode is set.
        try db.execute("PRAGMA page_size = \(pageSize)")
        _ = try db.configureForDurability()
        let pack = try ChunkPack(path: packPath(forIndexAt: path), io: disk.pack)
        let before = try db.userVersion
        _ = try migrator(pack: pack).migrate(db)
        // Best effort: the chunks are safe either way, only the space stays taken.
        if before == 1 { try? db.execute("VACUUM") }
        return ChunkStore(db: db, pack: pack)
    }

    /// Where the chunk of `hash` lies in the pack; nil when it is not held.
    /// A disk that fails the lookup is told as such, with the index's file.
    private func location(_ hash: Digest32) throws -> (offset: Int, length: Int)? {
        do {
            return try db.first("SELECT offset, length FROM packed WHERE hash = ?", [.blob(hash.bytes)]) { (Int($0.int64(0)), Int($0.int64(1))) }
        } catch let error as SQLiteError {
            throw StoreError.from(error, path: db.path)
        }
    }

    func has(_ hash: Digest32) throws -> Bool {
        try location(hash) != nil
    }

    func bytes(_ hash: Digest32) throws -> [UInt8]? {
        guard let (offset, length) = try location(hash) else { return nil }
        return try pack.withBytes(at: offset, count: length) { Array($0) }
    }

    /// Calls `body` with a held chunk's bytes, valid only during the call, and returns whether the
    /// chunk is held: a chunk served to a peer goes from the pack's map straight into the
    /// session's output, without an array of its own on the way.
    func withBytes(_ hash: Digest32, _ body: (UnsafeRawBufferPointer) -> Void) throws -> Bool {
        guard let (offset, length) = try location(hash) else { return false }
        try pack.withBytes(at: offset, count: length, body)
        return true
    }

    /// Every indexed chunk whose bytes are missing from the pack or do not match its hash, as
    /// a sentence each (reads and hashes every chunk, several at a time: `BLAKE2b.digests256`).
    func mismatches() throws -> [String] {
        var problems = [String]()
        var group: [(hash: [UInt8], bytes: ArraySlice<UInt8>)] = []
        func checkGroup() {
            for (chunk, digest) in zip(group, BLAKE2b.digests256(group.map(\.bytes))) where digest.bytes != chunk.hash {
                problems.append("chunk \(Hex.encode(chunk.hash)) does not match its hash")
            }
            group.removeAll(keepingCapacity: true)
        }
        try db.query("SELECT hash, offset, length FROM packed ORDER BY offset") { row in
            let hash = row.blob(0), offset = Int(row.int64(1)), length = Int(row.int64(2))
            do {
                group.append((hash, try pack.withBytes(at: offset, count: length) { Array($0)[...] }))
                if group.count == BLAKE2b.laneCount { checkGroup() }
            } catch {
                problems.append("chunk \(Hex.encode(hash)): \(error)")
            }
        }
        checkGroup()
        return problems
    }

    /// Appends the chunks not held yet (each once) and indexes them; returns how many were new.
    /// Each hash is the one the caller computed from its bytes (putFile) or checked against them
    /// (`VerifiedChunk`, for the chunk writer): hashing is the costly part and is done once.
    /// Call inside an IMMEDIATE transaction of `db`: it is what keeps other writers out.
    @discardableResult
    func append(_ chunks: [(hash: Digest32, bytes: ArraySlice<UInt8>)]) throws -> Int {
        var seen = Set<Digest32>()
        let new = try chunks.filter { try seen.insert($0.hash).inserted && !has($0.hash) }
        guard !new.isEmpty else { return 0 }
        let end = Int(try db.scalarInt("SELECT offset FROM pack_end") ?? 0)
        try pack.write(new.map(\.bytes), at: end)
        var offset = end
        for chunk in new {
            try db.run("INSERT INTO packed(hash, offset, length) VALUES (?, ?, ?)",
                       [.blob(chunk.hash.bytes), .integer(Int64(offset)), .integer(Int64(chunk.bytes.count))])
            offset += chunk.bytes.count
        }
        try db.run("UPDATE pack_end SET offset = ?", [.integer(Int64(offset))])
        return new.count
    }
}
