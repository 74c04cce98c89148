/// How a top-level transaction takes its locks. https://sqlite.org/lang_transaction.html
public enum TransactionKind: String, Sendable {
    /// Locks on first read/write. Cheapest, but a later write can fail with SQLITE_BUSY
    /// without waiting, if another connection wrote in between.
    case deferred = "DEFERRED"
    /// Takes the write lock at BEGIN, so the busy timeout applies there and the body never
    /// hits a mid-transaction SQLITE_BUSY. The default for writers.
    case immediate = "IMMEDIATE"
    /// Like immediate; in rollback-journal mode it also keeps readers out. Same as
    /// immediate in WAL mode.
    case exclusive = "EXCLUSIVE"
}

extension Connection {
    /// Runs `body` atomically: COMMIT when it returns, ROLLBACK when it throws (the
    /// original error is rethrown; a failing ROLLBACK is ignored in its favour).
    ///
    /// Nesting: when a transaction is already open (ours or a manual BEGIN), the call
    /// becomes a SAVEPOINT instead, and a thrown error rolls back only the nested part;
    /// `kind` is then ignored. The outer caller decides whether to catch the error and
    /// continue or let the whole transaction roll back.
    /// https://sqlite.org/lang_savepoint.html
    public func transaction<T>(_ kind: TransactionKind = .immediate, _ body: () throws -> T) throws -> T {
        if isInTransaction {
            return try savepoint(body)
        }
        try run("BEGIN \(kind.rawValue) TRANSACTION")
        let result: T
        do {
            result = try body()
        } catch {
            rollbackIfStillOpen()
            throw error
        }
        do {
            // COMMIT can fail (e.g. SQLITE_BUSY, disk full); the transaction is then still
            // open, and we roll it back rather than leave it dangling.
            try run("COMMIT TRANSACTION")
        } catch {
            rollbackIfStillOpen()
            throw error
        }
        return result
    }

    /// Some errors (disk full, I/O, ...) make SQLite roll back on its own; only issue
    /// ROLLBACK when the transaction is still open. https://sqlite.org/lang_transaction.html
    private func rollbackIfStillOpen() {
        if isInTransaction {
            try? run("ROLLBACK TRANSACTION")
        }
    }

    /// The nested form of `transaction`: SAVEPOINT, then RELEASE or ROLLBACK TO + RELEASE.
    private func savepoint<T>(_ body: () throws -> T) throws -> T {
        savepointDepth += 1
        defer { savepointDepth -= 1 }
        let name = "nested_\(savepointDepth)"
        try run("SAVEPOINT \(name)")
        let result: T
        do {
            result = try body()
        } catch {
            undoSavepoint(name)
            throw error
        }
        do {
            try run("RELEASE SAVEPOINT \(name)")
        } catch {
            undoSavepoint(name)
            throw error
        }
        return result
    }

    /// ROLLBACK TO keeps the savepoint open, so it is released afterwards too.
    /// Skipped when SQLite already rolled back the whole transaction.
    private func undoSavepoint(_ name: String) {
        guard isInTransaction else { return }
        try? run("ROLLBACK TRANSACTION TO SAVEPOINT \(name)")
        try? run("RELEASE SAVEPOINT \(name)")
    }
}
