import Crypto
import Private
import SQLite
import Tree
import Wire

/// A node's durable state: its records and the tree they materialize in one SQLite file, and the
/// chunks of its files in another beside it (`ChunkStore`).
///
/// Not thread-safe by design: the owner (the CLI, or later the node's serial queue) confines a
/// store to one thread, as its SQLite connection requires.
public final class Store {
    let db: Connection
    /// The chunk index and pack (`ChunkStore`), confined with `db` to the store's owner.
    let chunkStore: ChunkStore
    var chunkDB: Connection { chunkStore.db }
    /// The hybrid logical clock, persisted in `meta` so that restarts never reuse a timestamp
    /// even if the wall clock went backwards.
    var clock: HybridLogicalClock

    /// The newest timestamp this store's clock has given or taken (Protocol.md §3.3).
    public var lastClock: UInt64 { clock.last }
    /// Makes this process's push ids monotonic even within one millisecond.
    var pushIDs = PushIDGenerator()
    /// Set once the users directory is known to be built (it never becomes unbuilt while a
    /// store is open), so searches skip asking `meta` each time.
    var directoryBuilt = false
    /// Set while `rebuildTreeIfRequested` folds every record again: the users directory is
    /// rebuilt once at the end instead of per profile.
    var rebuildingTree = false
    /// The orderings declared per zone list, read once (`ZoneOrderCache`).
    let zoneOrderCache = ZoneOrderCache()
    /// The user ids of the authors seen lately (`userID(of:)`).
    private var recentUserIDs: [PublicKey: String] = [:]
    public let path: String
    /// How this store reaches the disk (`DiskAccess.system` unless a test says otherwise); the
    /// chunk writer and the background checkpointer open their files the same way.
    public let disk: DiskAccess
    /// The store connection's page cache, in KiB.
    public static let pageCacheKiB = 16_384
    /// Set by `checkpointInBackground`.
    private var checkpointer: BackgroundCheckpointer?
    /// The identity whose device key opens private conversations (`usePrivateKeys`); without
    /// it the store shows no private conversation.
    var privateIdentity: PrivateKey?
    var privateDevice: X25519PrivateKey?
    /// Key and leave records of every private conversation, by conversation, read once.
    var privateControl: [String: [Record]]?
    /// Membership of each private conversation, worked out again when its key or leave records change.
    var memberships: [String: Membership] = [:] { didSet { membershipGeneration &+= 1 } }
    /// Changes whenever a membership may have changed (a key or leave record, keys given, a
    /// rebuild): the node checks the private live values it shows again only then.
    public private(set) var membershipGeneration = 0
    /// The epoch key each key record's sealed keys give this node's device (nil: none of them
    /// is for it), by record id: tried once per record, whatever the number of resolutions.
    var boxKeys: [Digest32: EpochKey?] = [:]
    /// The last `sealedWriteKeys()` and the `membershipGeneration` it was worked out at.
    var sealedKeysCache: (generation: Int, keys: SealedWriteKeys)?
    /// How many sealed writes the last membership change judged again (tests look at it).
    var judgedOnMembershipChange = 0

    /// Key records whose boxes wait for a trial under the budgets of `KeyTrialQueue`.
    var keyTrials = KeyTrialQueue(nowMillis: 0)
    /// Key records tried that opened for this node, until the node asks (`takeOpenedKeyRecords`).
    var openedKeyRecords: [Record] = []
    /// Milliseconds of the monotonic clock the trial budgets run on; a test gives its own.
    public var keyTrialMillis: @Sendable () -> UInt64 = Store.monotonicMillis
    /// Key records whose boxes were tried, and boxes tried, since the store was opened.
    public internal(set) var keyRecordsTried = 0
    public internal(set) var boxesTried = 0
    /// Folds of the whole tree, and of one conversation's subtree, since the store was opened.
    public internal(set) var wholeRefolds = 0
    public internal(set) var conversationRefolds = 0

    static let monotonicStart = ContinuousClock.now
    /// Milliseconds since the first call. The start is read before the time now: a static is
    /// set on first use, so `now - monotonicStart` read `now` first and, on a first call slow
    /// enough to set the start a millisecond later, converted a negative count and trapped.
    @Sendable static func monotonicMillis() -> UInt64 {
        let start = monotonicStart
        let elapsed = (ContinuousClock.now - start).components
        return UInt64(max(0, elapsed.seconds)) * 1_000 + UInt64(max(0, elapsed.attoseconds / 1_000_000_000_000_000))
    }

    /// The first key record (in write order) seen of each author and epoch number of the
    /// conversations this node holds no key of: a later one is passed over untried.
    var unheldSlots: [UnheldSlot: WriteOrder] = [:]

    struct UnheldSlot: Hashable {
        let conversation: String
        let author: PublicKey
        let epoch: UInt64
    }

    /// An author's epoch number in a conversation, of which one key record counts.
    struct EpochSlotKey: Hashable {
        let author: PublicKey
        let epoch: UInt64
    }
    /// A page cache in KiB for the fold of a peer's large write, nil for the usual one
    /// (`pageCacheKiB`). Only benchmarks set it, to compare: the fold inserts in key order and
    /// needs no cache that grows with the content (LargeWriteBenchmark, BENCHMARKS.md).
    public var largeWriteCacheKiB: Int?
    /// Where the large writes folded lately lie, by record id (`largeWriteScope(of:)`).
    var largeWriteScopes: [Digest32: Path] = [:]
    var largeWriteScopeOrder: [Digest32] = []

    /// Opens (creating if needed) the store at `path` and its chunk index and pack, applies pending
    /// migrations and sets WAL with `synchronous=FULL`, so a committed write survives a crash or
    /// power loss. `disk` is how the files are reached: the real disk unless a test gives a
    /// failing one (a fault-injecting SQLite VFS and pack IO).
    public init(path: String, disk: DiskAccess = .system) throws(StoreError) {
        self.path = path
        self.disk = disk
        do {
            db = try Connection(path: path, vfs: disk.vfs)
            // A new store takes 16 KiB pages (the size is fixed when the file is made; stores made
            // before keep 4 KiB). Records and zones arrive mostly at the ends of their tables and
            // indexes, so a commit writes mostly full pages, and each page costs two write calls
            // to the WAL and a copy at the checkpoint: a cold sync of a year of chat spent a tenth
            // of its CPU besides signature checks less with pages four times larger (32 KiB gained
            // nothing more and took more memory).
            try db.execute("PRAGMA page_size = 16384")
            _ = try db.configureForDurability()
            // Reads through a memory map of the whole file (up to SQLite's 2 GB limit): its pages
            // are the kernel's file cache, shared and dropped under pressure, not this process's
            // memory. The page cache proper (16 MB, anonymous memory) then mostly holds the
            // pages a transaction writes; memory stays bounded whatever the store's size
            // (README, "Memory and storage at scale").
            //
            // secure_delete off (Debian's SQLite turns it on): it zeroes the bytes of every cell
            // a page gives up, and a B-tree gives up cells at each page split of an insert, so
            // storing a record zeroed about 2% of the instructions it took. It erases nothing
            // here: the store keeps every signed record by design (a deleted message is a newer
            // record; tree rows are derived from records), and the WAL keeps the earlier images
            // of a page until it is reused, whatever this setting.
            try db.execute("PRAGMA cache_size = -\(Store.pageCacheKiB); PRAGMA mmap_size = 2147418112; PRAGMA temp_store = MEMORY; PRAGMA secure_delete = OFF")
        } catch {
            throw Self.storeError(error, path: path)
        }
        // Opened once the store's own file is known to be a database, so a wrong path creates
        // no chunk file beside it.
        let chunkPath = ChunkStore.chunkPath(forStoreAt: path)
        do {
            chunkStore = try ChunkStore.open(path: chunkPath, disk: disk)
        } catch {
            throw Self.storeError(error, path: chunkPath)
        }
        do {
            _ = try Schema.migrator(chunks: chunkStore).migrate(db)
            let last = try db.scalarInt("SELECT value FROM meta WHERE key = 'clock'") ?? 0
            clock = HybridLogicalClock(last: UInt64(bitPattern: last))
            try rebuildTreeIfRequested()
        } catch {
            throw Self.storeError(error, path: path)
        }
    }

    /// Runs the WAL checkpoints that this store's commits call for on a connection and thread of
    /// their own (`BackgroundCheckpointer`, every 1,000 pages of WAL growth as SQLite would),
    /// instead of inside the commit that crosses the threshold. A running node calls this: its
    /// queue stores every batch of a sync, and a checkpoint inside a commit held it (and the
    /// reads, pushes and verification it feeds) while some 4 MB were copied and synced. Nothing
    /// changes for durability: committed transactions are in the WAL either way.
    public func checkpointInBackground() throws {
        // Only a file in WAL mode has a WAL; another connection to an in-memory store would
        // open a different, empty database.
        guard checkpointer == nil, try db.journalMode == .wal else { return }
        checkpointer = try BackgroundCheckpointer(for: db, path: path)
    }

    /// WAL pages between background checkpoints, once `checkpointInBackground` has run (for tests).
    var checkpointFrames: Int? { checkpointer?.framesPerCheckpoint }

    /// Returns once the background checkpoints asked for so far have run (for tests).
    func waitForCheckpoints() {
        checkpointer?.drain()
    }

    /// An error met while opening the file at `path`, as the store reports it.
    private static func storeError(_ error: any Error, path: String) -> StoreError {
        if let error = error as? StoreError { return error }
        if let error = error as? SQLiteError {
            return error.isCorrupt ? .corrupt(path: path, reason: error.message) : .from(error, path: path)
        }
        return .corrupt(path: path, reason: "\(error)")
    }

    /// Runs several reads on one snapshot (another process may write in between otherwise), and
    /// under one read lock: outside a transaction every statement takes and drops its own (four
    /// `fcntl` calls and two `stat`s each). Inside another transaction, a savepoint of it.
    public func readTransaction<T>(_ body: () throws -> T) throws -> T {
        do {
            return try db.transaction(.deferred, body)
        } catch let error as SQLiteError {
            throw StoreError.from(error, path: path)
        }
    }

    /// Runs `body` in one IMMEDIATE transaction, mapping SQLite failures to `StoreError`.
    func transaction<T>(_ body: () throws -> T) throws -> T {
        do {
            return try db.transaction(.immediate, body)
        } catch let error as SQLiteError {
            zoneOrderCache.forgetAll()  // what it declared was rolled back
            throw StoreError.from(error, path: path)
        } catch {
            zoneOrderCache.forgetAll()
            throw error
        }
    }

    /// Path of the file that indexes this store's chunks (their bytes are in the pack beside it).
    public var chunkPath: String { ChunkStore.chunkPath(forStoreAt: path) }

    /// A connection of its own to the chunk index, and a pack descriptor, for storing fetched
    /// chunks on another thread than this store's (`ChunkWriter`). Only for a store in a file:
    /// another connection to an in-memory database would open a different, empty one.
    public func chunkWriter() throws(StoreError) -> ChunkWriter {
        do {
            guard try chunkDB.journalMode == .wal else {
                throw StoreError.io(path: path, reason: "a chunk writer needs a store in a file (in WAL mode)")
            }
            return try ChunkWriter(path: chunkPath, disk: disk)
        } catch let error as StoreError {
            throw error
        } catch let error as SQLiteError {
            throw .database(error)
        } catch {
            throw .corrupt(path: path, reason: "\(error)")
        }
    }

    /// Number of records held.
    public func recordCount() throws -> Int {
        Int(try db.scalarInt("SELECT count(*) FROM records") ?? 0)
    }

    /// `PRAGMA integrity_check` rows of the store and of its chunk index, and the chunks whose
    /// bytes in the pack do not match their hash (`ChunkStore.mismatches`): `["ok"]` when all
    /// are sound; otherwise each problem, those of the chunks prefixed with "chunks: ".
    public func integrityCheck() throws -> [String] {
        let main = try db.integrityCheck()
        let chunks = try chunkDB.integrityCheck().filter { $0 != "ok" } + chunkStore.mismatches()
        if main == ["ok"], chunks.isEmpty { return ["ok"] }
        return main.filter { $0 != "ok" } + chunks.map { "chunks: " + $0 }
    }

    /// Calls `body` with every record's bytes in arrival order, without loading them all at once.
    public func forEachRecord(_ body: ([UInt8]) throws -> Void) throws {
        try db.query("SELECT bytes FROM records ORDER BY seq") { row in try body(row.blob(0)) }
    }

    /// Advances the clock for a local write and persists it (inside the caller's transaction).
    /// The persisted value is read again first: another process (the CLI beside a running node)
    /// may have written since, and the write lock held by the transaction orders the two.
    func nextClock(nowMillis: UInt64) throws -> UInt64 {
        let persisted = UInt64(bitPattern: try db.scalarInt("SELECT value FROM meta WHERE key = 'clock'") ?? 0)
        clock.last = max(clock.last, persisted)
        let stamp = clock.send(nowMillis: nowMillis)
        try saveClock()
        return stamp
    }

    func saveClock() throws {
        try db.run("INSERT INTO meta(key, value) VALUES ('clock', ?) ON CONFLICT(key) DO UPDATE SET value = max(value, excluded.value)",
                   [.integer(Int64(bitPattern: clock.last))])
    }
}

extension Store {
    /// The author's user id (its key in base64url), from a small cache: every record of a user
    /// zone or a message needs it, and a year of chat has a few hundred authors, while encoding
    /// it anew made a string per record. Emptied when it reaches `maxRecentUserIDs`, so a flood
    /// of authors cannot grow it.
    func userID(of author: PublicKey) -> String {
        if let id = recentUserIDs[author] { return id }
        if recentUserIDs.count >= Store.maxRecentUserIDs { recentUserIDs.removeAll(keepingCapacity: true) }
        let id = author.userID
        recentUserIDs[author] = id
        return id
    }

    static let maxRecentUserIDs = 4096

    /// How many user ids the cache holds (for tests).
    var recentUserIDCount: Int { recentUserIDs.count }
}
