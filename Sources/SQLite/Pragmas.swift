/// SQLite journal modes. https://sqlite.org/pragma.html#pragma_journal_mode
public enum JournalMode: String, Sendable, CaseIterable {
    /// Rollback journal deleted at each commit (SQLite's default for files).
    case delete
    /// Rollback journal truncated instead of deleted.
    case truncate
    /// Rollback journal header zeroed instead of deleted.
    case persist
    /// Journal kept in memory; what in-memory databases always report.
    case memory
    /// Write-ahead log: readers do not block the writer and vice versa.
    case wal
    /// No journal: no atomic commit. Never use for real data.
    case off
}

extension Connection {
    /// The journal mode currently in effect.
    public var journalMode: JournalMode {
        get throws(SQLiteError) {
            try parseJournalMode(scalarText("PRAGMA journal_mode"))
        }
    }

    /// Asks for `mode` and returns the mode SQLite actually chose, which can differ
    /// (an in-memory database stays `.memory`; WAL needs a writable file).
    @discardableResult
    public func setJournalMode(_ mode: JournalMode) throws(SQLiteError) -> JournalMode {
        // PRAGMAs take no bound parameters; the value comes from our own enum.
        try parseJournalMode(scalarText("PRAGMA journal_mode = \(mode.rawValue)"))
    }

    /// Settings for data that must survive crashes and power loss, applied once after opening:
    /// - `journal_mode=WAL`: readers and the writer do not block each other, and the mode
    ///   is persistent in the file. https://sqlite.org/wal.html
    /// - `synchronous=FULL`: a commit is fsynced before it is reported as done, so
    ///   success means durable even across power loss (NORMAL in WAL mode is not).
    ///   https://sqlite.org/pragma.html#pragma_synchronous
    /// - `foreign_keys=ON`: off by default in SQLite, per connection.
    ///   https://sqlite.org/foreignkeys.html
    ///
    /// Must be called outside a transaction (foreign_keys is a no-op inside one).
    /// Returns the resulting journal mode so callers can check for `.wal`.
    @discardableResult
    public func configureForDurability() throws(SQLiteError) -> JournalMode {
        let mode = try setJournalMode(.wal)
        try execute("PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON;")
        return mode
    }

    /// Whether foreign key constraints are enforced on this connection.
    public var foreignKeysEnabled: Bool {
        get throws(SQLiteError) { try scalarInt("PRAGMA foreign_keys") == 1 }
    }

    /// The schema version number kept in the file header (`PRAGMA user_version`), used
    /// by `Migrator` to know which migrations already ran. 0 for a new database.
    public var userVersion: Int {
        get throws(SQLiteError) { Int(try scalarInt("PRAGMA user_version") ?? 0) }
    }

    /// Sets `PRAGMA user_version`. It is a 32-bit signed field in the header, so larger
    /// values are refused. https://sqlite.org/pragma.html#pragma_user_version
    public func setUserVersion(_ version: Int) throws(SQLiteError) {
        guard let checked = Int32(exactly: version) else {
            throw SQLiteError(code: SQLiteError.range, message: "user_version \(version) does not fit in 32 bits")
        }
        try execute("PRAGMA user_version = \(checked)")
    }

    /// Runs `PRAGMA integrity_check` and returns its rows: `["ok"]` for a healthy
    /// database, otherwise one line per problem found. Why: to detect on-disk damage
    /// early and report it instead of failing in odd ways later.
    /// https://sqlite.org/pragma.html#pragma_integrity_check
    public func integrityCheck() throws(SQLiteError) -> [String] {
        let statement = try prepare("PRAGMA integrity_check")
        var lines: [String] = []
        while try statement.step() {
            lines.append(statement.text(0))
        }
        return lines
    }

    private func parseJournalMode(_ text: String?) throws(SQLiteError) -> JournalMode {
        guard let text, let mode = JournalMode(rawValue: text.lowercased()) else {
            throw SQLiteError(code: SQLiteError.error, message: "unexpected journal mode \(text ?? "NULL")")
        }
        return mode
    }
}
