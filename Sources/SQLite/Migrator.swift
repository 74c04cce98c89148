/// One numbered schema change.
///
/// Why numbered: the number is stored in `PRAGMA user_version` once applied, so each
/// database knows exactly which migrations it has, without a bookkeeping table.
public struct Migration: Sendable {
    /// Position in the sequence, starting at 1, without gaps.
    public let version: Int
    /// A short human label, for logs and errors.
    public let name: String
    /// The change itself; runs inside the migration's transaction.
    let apply: @Sendable (Connection) throws -> Void

    /// A migration given as an SQL script (may contain several statements).
    public init(version: Int, name: String, sql: String) {
        self.version = version
        self.name = name
        self.apply = { db in try db.execute(sql) }
    }

    /// A migration given as code, for changes SQL alone cannot express (e.g. data
    /// rewritten in Swift). It runs inside a transaction, so it cannot change
    /// `PRAGMA foreign_keys` or `journal_mode`.
    public init(version: Int, name: String, _ apply: @escaping @Sendable (Connection) throws -> Void) {
        self.version = version
        self.name = name
        self.apply = apply
    }
}

/// Why migrations refused to run.
public enum MigrationError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The database was written by newer code (its `user_version` is above every
    /// migration we know). Running old code on it could corrupt data, so we stop.
    case databaseTooNew(found: Int, known: Int)
    /// The migration list is not numbered 1, 2, 3, ... : a gap, duplicate or reordering.
    case nonSequentialVersion(expected: Int, found: Int, name: String)

    /// A sentence for logs and users.
    public var description: String {
        switch self {
        case .databaseTooNew(let found, let known):
            return "database schema version \(found) is newer than this program knows (\(known)); "
                + "upgrade the program"
        case .nonSequentialVersion(let expected, let found, let name):
            return "migration '\(name)' has version \(found), expected \(expected): "
                + "migrations must be numbered 1, 2, 3, ... without gaps"
        }
    }
}

/// Brings a database schema up to date by running, in order, each migration newer than
/// the database's `PRAGMA user_version`.
///
/// Each migration runs in its own IMMEDIATE transaction together with the update of
/// `user_version`, so a crash or error leaves the database at the previous version, never
/// half-migrated, and two processes migrating at once do not both apply the same step.
public struct Migrator: Sendable {
    /// The migrations, in the order added.
    public private(set) var migrations: [Migration]

    /// Starts from a list (which may be empty and filled with `add`).
    public init(_ migrations: [Migration] = []) {
        self.migrations = migrations
    }

    /// Appends a migration written in SQL.
    public mutating func add(version: Int, name: String, sql: String) {
        migrations.append(Migration(version: version, name: name, sql: sql))
    }

    /// Appends a migration written in Swift.
    public mutating func add(version: Int, name: String, _ apply: @escaping @Sendable (Connection) throws -> Void) {
        migrations.append(Migration(version: version, name: name, apply))
    }

    /// The schema version this code produces: the last migration's number (0 if none).
    public var latestVersion: Int { migrations.last?.version ?? 0 }

    /// Checks the numbering is 1, 2, 3, ... Called by `migrate`; also usable in a unit test.
    public func validate() throws(MigrationError) {
        for (offset, migration) in migrations.enumerated() where migration.version != offset + 1 {
            throw .nonSequentialVersion(expected: offset + 1, found: migration.version, name: migration.name)
        }
    }

    /// Applies every pending migration and returns the versions applied (empty when the
    /// database was already current). Throws `MigrationError` for bad numbering or a
    /// too-new database, or the migration's own error (that migration is rolled back).
    @discardableResult
    public func migrate(_ db: Connection) throws -> [Int] {
        try validate()
        let known = latestVersion
        let initial = try db.userVersion
        if initial > known {
            throw MigrationError.databaseTooNew(found: initial, known: known)
        }
        var applied: [Int] = []
        for migration in migrations where migration.version > initial {
            let ran = try db.transaction(.immediate) { () throws -> Bool in
                // Re-read under the write lock: another process may have migrated meanwhile.
                let current = try db.userVersion
                if current > known {
                    throw MigrationError.databaseTooNew(found: current, known: known)
                }
                guard current < migration.version else { return false }
                try migration.apply(db)
                try db.setUserVersion(migration.version)
                return true
            }
            if ran { applied.append(migration.version) }
        }
        return applied
    }
}
