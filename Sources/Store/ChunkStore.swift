import Crypto
import SQLite

/// The chunk database: chunks by their BLAKE2b-256 hash, each stored once, in a file of their
/// own beside the store (`chunkPath(forStoreAt:)`), with 64 KiB pages.
///
/// Why a file of its own: the store's records and tree want small pages (a tree write touches a
/// few small rows), while a chunk is 64 KiB. In 4 KiB pages a chunk was 17 WAL frames, each
/// written with two system calls, and copied again page by page by the checkpoint; in 64 KiB
/// pages it is two frames, and a checkpoint copies a few large pages. The page size of an
/// SQLite file is fixed once it is in WAL mode, hence a second file rather than a pragma.
/// Chunks are only ever added, and a chunk is self-certifying (its hash is its key), so nothing
/// needs the two files to change together: a chunk is committed before any record that names
/// it (`putFile`), and a chunk no record names yet is harmless.
struct ChunkStore {
    /// Page size of a new chunk file: a 64 KiB chunk is one overflow page plus its start in a
    /// leaf. An existing file keeps the size it was made with.
    static let pageSize = 65536
    /// WAL size between checkpoints. Larger than the store's (about 4 MB): a checkpoint copies
    /// every chunk a second time, so a photo arriving (tens of MiB at most) is better left whole
    /// in the WAL, and the copy done once, after it, than paid for several times while it
    /// arrives and competes with the transfer for the cores.
    static let checkpointBytes = 32 << 20
    /// Chunk reads go through a memory map of the file, up to this size: serving a chunk then
    /// reads it where the kernel holds it, without a read call copying it first.
    static let mmapBytes = 1 << 30
    static var framesPerCheckpoint: Int { checkpointBytes / pageSize }

    /// The chunk file's own numbered migrations, kept in its own `user_version`.
    static let migrator = Migrator([
        Migration(version: 1, name: "chunks", sql: """
            CREATE TABLE chunks (
                id INTEGER PRIMARY KEY,
                hash BLOB NOT NULL UNIQUE,
                bytes BLOB NOT NULL
            ) STRICT;
            """),
    ])

    let db: Connection

    /// The chunk file for the store at `storePath`: `store.sqlite` keeps its chunks in
    /// `store.chunks.sqlite`. An in-memory store has an in-memory chunk database.
    static func chunkPath(forStoreAt storePath: String) -> String {
        if storePath.isEmpty || storePath.hasPrefix(":memory:") { return ":memory:" }
        let suffix = ".sqlite"
        let base = storePath.hasSuffix(suffix) ? String(storePath.dropLast(suffix.count)) : storePath
        return base + ".chunks" + suffix
    }

    /// Opens (creating if needed) the chunk file at `path` with 64 KiB pages, in WAL mode with
    /// `synchronous=FULL` (a stored file's chunks must be durable before its records are), and
    /// brings its schema up to date.
    static func open(path: String) throws -> Connection {
        let db = try Connection(path: path)
        // Takes effect only while the file is empty, before WAL mode is set.
        try db.execute("PRAGMA page_size = \(pageSize)")
        _ = try db.configureForDurability()
        // SQLite's automatic checkpoint counts pages.
        try db.execute("PRAGMA wal_autocheckpoint = \(framesPerCheckpoint); PRAGMA mmap_size = \(mmapBytes)")
        _ = try migrator.migrate(db)
        return db
    }

    func has(_ hash: Digest32) throws -> Bool {
        try db.first("SELECT 1 FROM chunks WHERE hash = ?", [.blob(hash.bytes)]) { _ in true } ?? false
    }

    func bytes(_ hash: Digest32) throws -> [UInt8]? {
        try db.first("SELECT bytes FROM chunks WHERE hash = ?", [.blob(hash.bytes)]) { $0.blob(0) }
    }

    /// Calls `body` with a held chunk's bytes, valid only during the call, and returns whether the
    /// chunk is held: a chunk served to a peer goes from SQLite straight into the session's
    /// output, without an array of its own on the way.
    func withBytes(_ hash: Digest32, _ body: (UnsafeRawBufferPointer) -> Void) throws -> Bool {
        try db.first("SELECT bytes FROM chunks WHERE hash = ?", [.blob(hash.bytes)]) { row in row.withBlob(0, body) } != nil
    }

    /// Stores a chunk under `hash`, which the caller computed from `bytes` (putFile) or checked
    /// against them (`VerifiedChunk`, for the chunk writer): hashing is the costly part and is
    /// done once. Returns whether the chunk was new.
    @discardableResult
    func put(_ hash: Digest32, _ bytes: ArraySlice<UInt8>) throws -> Bool {
        let statement = try db.cachedStatement("INSERT OR IGNORE INTO chunks(hash, bytes) VALUES (?, ?)")
        try statement.bind(.blob(hash.bytes), at: 1)
        // Bound without a copy: the chunk is copied into the record and pages anyway.
        return try statement.withBorrowedBlob(bytes, at: 2) {
            _ = try statement.step()
            return db.changes == 1
        }
    }
}
