internal import CSQLite

/// One open SQLite database connection (sqlite3*).
///
/// Why not Sendable: the connection is opened with SQLITE_OPEN_NOMUTEX, so SQLite does no
/// locking of its own on it; it is cheaper, but only correct when exactly one thread or
/// serial queue uses it at a time. The owner (an actor, or a class with a serial queue)
/// confines it. Separate processes or connections coordinate through file locks, and the
/// busy timeout makes them wait instead of failing at once.
///
/// Closing happens in `deinit`: cached statements are released first, then
/// sqlite3_close_v2 closes the handle (or defers it until statements the caller still
/// holds are gone). https://sqlite.org/c3ref/close.html
public final class Connection {
    /// The sqlite3 handle.
    let handle: OpaquePointer
    /// The path this connection was opened with (":memory:" for in-memory databases).
    public let path: String
    /// The VFS this connection was opened with; nil for SQLite's default. Another connection to
    /// the same file (a background checkpointer) opens with the same one.
    public let vfs: String?
    /// Statements kept compiled for reuse, keyed by SQL text.
    private var statementCache: [String: Statement] = [:]
    /// The last statements compiled or found in the dictionary, looked through before it: the
    /// SQL of a hot path is a literal, whose string compares equal to itself at once, while
    /// hashing it for the dictionary cost some 700 instructions per use (two to three uses for
    /// each record a sync stores). Replaced in turn, never reordered.
    private var recentStatements: [Statement] = []
    private var nextRecentSlot = 0
    private static let recentStatementCount = 8
    /// Depth of nested `transaction` calls running as savepoints, for unique names.
    var savepointDepth = 0
    /// The hook set by `setWALHook`, kept alive as long as SQLite may call it.
    var walHook: WALHookBox?

    /// Default wait for a lock held by another connection before SQLITE_BUSY is reported.
    public static let defaultBusyTimeoutMilliseconds: Int32 = 5_000

    /// SQLite's process-wide settings, made before its first use (`sqlite3_config` is refused
    /// once SQLite is initialized). Memory statistics off: with them on, every allocation and
    /// free inside SQLite takes a global mutex to count bytes, a few percent of storing a
    /// record (Debian's SQLite is built without lookaside, so rows and cursors allocate from
    /// the heap), and nothing here reads the counts. What initializes SQLite otherwise (the
    /// registration of a VFS) calls this first.
    public static func configureOnce() { _ = configured }
    private static let configured: Void = { _ = lanchat_sqlite3_config_memstatus(0) }()

    /// Opens (and by default creates) the database at `path`.
    ///
    /// - `readOnly`: open with SQLITE_OPEN_READONLY; every write then fails with
    ///   `isReadOnly`. `create` is ignored, a read-only open never creates a file.
    /// - `create`: when false, a missing file is an error (`isCantOpen`) instead of a new
    ///   empty database.
    /// - `vfs`: the name of a registered SQLite VFS to reach the file through; nil (the default)
    ///   is SQLite's default VFS, the real disk. Tests give a fault-injecting one.
    ///   https://sqlite.org/vfs.html
    ///
    /// The file's header is read once here, so a file that is not a database fails now
    /// (`isCorrupt`, SQLITE_NOTADB) instead of at some later first query.
    /// https://sqlite.org/c3ref/open.html
    public init(path: String, readOnly: Bool = false, create: Bool = true, vfs: String? = nil) throws(SQLiteError) {
        Connection.configureOnce()
        // NOMUTEX: single-owner use, see the type's documentation. EXRESCODE: extended
        // result codes from the very first call. https://sqlite.org/c3ref/c_open_autoproxy.html
        var flags = SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE
        if readOnly {
            flags |= SQLITE_OPEN_READONLY
        } else {
            flags |= SQLITE_OPEN_READWRITE
            if create { flags |= SQLITE_OPEN_CREATE }
        }
        var db: OpaquePointer?
        let rc = sqlite3_open_v2(path, &db, flags, vfs)
        guard let db else {
            // Only on out-of-memory does SQLite return no handle at all.
            throw SQLiteError(code: rc == SQLITE_OK ? SQLITE_NOMEM : rc, message: "cannot allocate connection", sql: nil)
        }
        do {
            // Even a failed open returns a handle that carries the message and must be closed.
            try SQLiteError.check(rc, db)
            sqlite3_extended_result_codes(db, 1)
            // https://sqlite.org/c3ref/busy_timeout.html
            try SQLiteError.check(sqlite3_busy_timeout(db, Self.defaultBusyTimeoutMilliseconds), db)
            // Opening is lazy; reading the schema forces the header check now.
            let probe = "SELECT count(*) FROM sqlite_master"
            try SQLiteError.check(sqlite3_exec(db, probe, nil, nil, nil), db, sql: probe)
        } catch {
            sqlite3_close_v2(db)
            throw error
        }
        self.handle = db
        self.path = path
        self.vfs = vfs
    }

    /// Opens a private, empty in-memory database: for tests and scratch work.
    public static func inMemory() throws(SQLiteError) -> Connection {
        try Connection(path: ":memory:")
    }

    deinit {
        recentStatements.removeAll()
        statementCache.removeAll()
        sqlite3_close_v2(handle)
    }

    /// Changes how long to wait for another connection's lock before failing with SQLITE_BUSY.
    /// https://sqlite.org/c3ref/busy_timeout.html
    public func setBusyTimeout(milliseconds: Int32) throws(SQLiteError) {
        try SQLiteError.check(sqlite3_busy_timeout(handle, milliseconds), handle)
    }

    // MARK: Running SQL

    /// Runs a script of zero or more `;`-separated statements, discarding any rows.
    /// For schema setup and PRAGMAs; it takes no parameters, so never interpolate input
    /// into it. Statements run in order and stop at the first error, which names the
    /// failing statement.
    public func execute(_ sql: String) throws(SQLiteError) {
        let result: Result<Void, SQLiteError> = sql.withCString { start in
            Result { () throws(SQLiteError) in
                var cursor: UnsafePointer<CChar>? = start
                while let current = cursor, current.pointee != 0 {
                    var stmt: OpaquePointer?
                    // The tail pointer marks where the next statement starts.
                    // https://sqlite.org/c3ref/prepare.html
                    let prepared = sqlite3_prepare_v2(handle, current, -1, &stmt, &cursor)
                    if prepared != SQLITE_OK {
                        // Report the script from the failing statement on.
                        let rest = String(String(cString: current).drop(while: \.isWhitespace))
                        try SQLiteError.check(prepared, handle, sql: rest)
                    }
                    guard let stmt else { continue }  // only whitespace or a comment
                    defer { sqlite3_finalize(stmt) }
                    var rc: Int32
                    repeat { rc = sqlite3_step(stmt) } while rc == SQLITE_ROW
                    try SQLiteError.check(rc, handle, sql: String(cString: sqlite3_sql(stmt)))
                }
            }
        }
        try result.get()
    }

    /// Compiles one SQL statement for repeated use. Rejects scripts with more than one
    /// statement (use `execute(_:)`), since the rest would be silently ignored.
    public func prepare(_ sql: String) throws(SQLiteError) -> Statement {
        try compile(sql, persistent: false)
    }

    /// Returns a compiled statement for `sql` from this connection's cache, compiling it
    /// on first use. Why: hot paths run the same SQL over and over, and compiling is the
    /// expensive part. The statement comes back reset with its bindings cleared.
    ///
    /// The same object is handed to every caller of the same SQL, so do not request it
    /// again while still iterating it (e.g. the same SELECT nested inside its own loop):
    /// the inner request resets the outer iteration.
    public func cachedStatement(_ sql: String) throws(SQLiteError) -> Statement {
        let statement: Statement
        // Lengths first (a word each): comparing the text of two different statements cost
        // some 80 instructions, for each recent one passed over.
        let length = sql.utf8.count
        if let recent = recentStatements.first(where: { $0.sqlLength == length && $0.sql == sql }) {
            statement = recent
        } else {
            if let cached = statementCache[sql] {
                statement = cached
            } else {
                statement = try compile(sql, persistent: true)
                statementCache[sql] = statement
            }
            if recentStatements.count < Self.recentStatementCount {
                recentStatements.append(statement)
            } else {
                recentStatements[nextRecentSlot] = statement
                nextRecentSlot = (nextRecentSlot + 1) % Self.recentStatementCount
            }
        }
        statement.reset()
        statement.clearBindings()
        return statement
    }

    /// Drops all cached statements, e.g. to free memory after a one-off batch.
    public func clearStatementCache() {
        recentStatements.removeAll()
        nextRecentSlot = 0
        statementCache.removeAll()
    }

    /// Compiles exactly one statement. `persistent` passes SQLITE_PREPARE_PERSISTENT, a hint
    /// that the statement will be kept and reused. https://sqlite.org/c3ref/c_prepare_normalize.html
    private func compile(_ sql: String, persistent: Bool) throws(SQLiteError) -> Statement {
        let flags = persistent ? UInt32(SQLITE_PREPARE_PERSISTENT) : 0
        var stmt: OpaquePointer?
        var extraStatement = false
        // Passing the length including the NUL terminator saves SQLite a copy.
        // https://sqlite.org/c3ref/prepare.html
        let byteCount = Int32(truncatingIfNeeded: sql.utf8.count + 1)
        let rc = sql.withCString { start in
            var tail: UnsafePointer<CChar>?
            let rc = sqlite3_prepare_v3(handle, start, byteCount, flags, &stmt, &tail)
            if rc == SQLITE_OK, let tail, tail.pointee != 0 {
                // Anything other than whitespace/comments after the first statement?
                var next: OpaquePointer?
                let nextRC = sqlite3_prepare_v2(handle, tail, -1, &next, nil)
                extraStatement = nextRC != SQLITE_OK || next != nil
                sqlite3_finalize(next)
            }
            return rc
        }
        try SQLiteError.check(rc, handle, sql: sql)
        guard let stmt else {
            throw SQLiteError(code: SQLiteError.misuse, message: "no SQL statement to prepare", sql: sql)
        }
        if extraStatement {
            sqlite3_finalize(stmt)
            throw SQLiteError(
                code: SQLiteError.misuse,
                message: "prepare accepts a single statement; use execute(_:) for scripts", sql: sql)
        }
        return Statement(handle: stmt, sql: sql)
    }

    // MARK: Convenience over cached statements

    /// Runs one statement with parameters to completion (INSERT/UPDATE/DELETE/DDL),
    /// through the statement cache.
    public func run(_ sql: String, _ values: [SQLValue] = []) throws(SQLiteError) {
        let statement = try cachedStatement(sql)
        defer { release(statement) }
        try statement.bind(values)
        while try statement.step() {}
    }

    /// Calls `body` for each result row. The `Row` is only valid inside `body`.
    /// Errors thrown by `body` stop the iteration and propagate unchanged.
    public func query(_ sql: String, _ values: [SQLValue] = [], _ body: (Row) throws -> Void) throws {
        let statement = try cachedStatement(sql)
        defer { release(statement) }
        try statement.bind(values)
        let row = Row(statement: statement)
        while try statement.step() {
            try body(row)
        }
    }

    /// Maps every result row through `transform` and returns the results.
    public func all<T>(_ sql: String, _ values: [SQLValue] = [], _ transform: (Row) throws -> T) throws -> [T] {
        var results: [T] = []
        try query(sql, values) { row in results.append(try transform(row)) }
        return results
    }

    /// Maps the first result row through `transform`; nil when there is no row.
    /// Stops after the first row, so `LIMIT 1` is optional.
    public func first<T>(_ sql: String, _ values: [SQLValue] = [], _ transform: (Row) throws -> T) throws -> T? {
        let statement = try cachedStatement(sql)
        defer { release(statement) }
        try statement.bind(values)
        guard try statement.step() else { return nil }
        return try transform(Row(statement: statement))
    }

    /// The first result row's values, copied out; nil when there is no row.
    public func firstValues(_ sql: String, _ values: [SQLValue] = []) throws(SQLiteError) -> [SQLValue]? {
        let statement = try cachedStatement(sql)
        defer { release(statement) }
        try statement.bind(values)
        guard try statement.step() else { return nil }
        return statement.values
    }

    /// The first column of the first row; nil when there is no row (a NULL value is `.null`).
    public func scalar(_ sql: String, _ values: [SQLValue] = []) throws(SQLiteError) -> SQLValue? {
        let statement = try cachedStatement(sql)
        defer { release(statement) }
        try statement.bind(values)
        guard try statement.step() else { return nil }
        return statement.value(0)
    }

    /// The first column of the first row as Int64; nil when there is no row or it is NULL.
    /// For `SELECT count(*)`, `SELECT max(id)` and the like. Non-integers are converted
    /// the way SQLite converts them (https://sqlite.org/c3ref/column_blob.html).
    public func scalarInt(_ sql: String, _ values: [SQLValue] = []) throws(SQLiteError) -> Int64? {
        let statement = try cachedStatement(sql)
        defer { release(statement) }
        try statement.bind(values)
        guard try statement.step(), !statement.isNull(0) else { return nil }
        return statement.int64(0)
    }

    /// The first column of the first row as text; nil when there is no row or it is NULL.
    public func scalarText(_ sql: String, _ values: [SQLValue] = []) throws(SQLiteError) -> String? {
        let statement = try cachedStatement(sql)
        defer { release(statement) }
        try statement.bind(values)
        guard try statement.step(), !statement.isNull(0) else { return nil }
        return statement.text(0)
    }

    /// Puts a cached statement back: reset so it holds no read lock or WAL snapshot,
    /// bindings cleared so large blobs are not kept alive.
    private func release(_ statement: Statement) {
        statement.reset()
        statement.clearBindings()
    }

    // MARK: State

    /// Rowid of the most recent successful INSERT on this connection.
    /// https://sqlite.org/c3ref/last_insert_rowid.html
    public var lastInsertRowID: Int64 { sqlite3_last_insert_rowid(handle) }

    /// Rows changed by the most recent INSERT/UPDATE/DELETE. https://sqlite.org/c3ref/changes.html
    public var changes: Int { Int(sqlite3_changes64(handle)) }

    /// Rows changed since the connection opened. https://sqlite.org/c3ref/total_changes.html
    public var totalChanges: Int { Int(sqlite3_total_changes64(handle)) }

    /// True inside BEGIN ... COMMIT/ROLLBACK (autocommit off). https://sqlite.org/c3ref/get_autocommit.html
    public var isInTransaction: Bool { sqlite3_get_autocommit(handle) == 0 }

    /// True when the main database cannot be written (read-only open or read-only file).
    /// https://sqlite.org/c3ref/db_readonly.html
    public var isReadOnly: Bool { sqlite3_db_readonly(handle, "main") == 1 }
}

/// A connection is confined to one thread or serial queue by its owner; never share it.
@available(*, unavailable)
extension Connection: Sendable {}
