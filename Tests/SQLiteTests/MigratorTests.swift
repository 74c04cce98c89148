import Testing
import SQLite

@Suite("Migrator")
struct MigratorTests {
    static func migrator() -> Migrator {
        var m = Migrator()
        m.add(version: 1, name: "create log", sql: "CREATE TABLE log(step INTEGER); INSERT INTO log VALUES (1);")
        m.add(version: 2, name: "add item") { db in
            try db.execute("CREATE TABLE item(id INTEGER PRIMARY KEY, name TEXT)")
            try db.run("INSERT INTO log VALUES (?)", [2])
        }
        m.add(version: 3, name: "add column", sql: "ALTER TABLE item ADD COLUMN size INTEGER; INSERT INTO log VALUES (3);")
        return m
    }

    @Test func appliesInOrderAndSetsUserVersion() throws {
        let db = try Connection.inMemory()
        #expect(try db.userVersion == 0)
        let applied = try Self.migrator().migrate(db)
        #expect(applied == [1, 2, 3])
        #expect(try db.userVersion == 3)
        #expect(try db.all("SELECT step FROM log ORDER BY rowid") { $0.int64(0) } == [1, 2, 3])
    }

    @Test func rerunIsANoOp() throws {
        let db = try Connection.inMemory()
        try Self.migrator().migrate(db)
        #expect(try Self.migrator().migrate(db) == [])
        #expect(try db.scalarInt("SELECT count(*) FROM log") == 3)
        #expect(try db.userVersion == 3)
    }

    @Test func appliesOnlyNewerMigrations() throws {
        let db = try Connection.inMemory()
        var old = Self.migrator()
        old = Migrator(Array(old.migrations.prefix(1)))
        #expect(try old.migrate(db) == [1])
        #expect(try Self.migrator().migrate(db) == [2, 3])
        #expect(try db.all("SELECT step FROM log ORDER BY rowid") { $0.int64(0) } == [1, 2, 3])
    }

    @Test func refusesTooNewDatabase() throws {
        let db = try Connection.inMemory()
        try db.setUserVersion(7)
        #expect(throws: MigrationError.databaseTooNew(found: 7, known: 3)) {
            try Self.migrator().migrate(db)
        }
        #expect(try db.userVersion == 7)
    }

    @Test(arguments: [[1, 3], [2], [1, 1], [2, 1], [0, 1]])
    func refusesBadNumbering(versions: [Int]) throws {
        let db = try Connection.inMemory()
        var m = Migrator()
        for v in versions { m.add(version: v, name: "m\(v)", sql: "SELECT 1") }
        let error = try #require(throws: MigrationError.self) { try m.migrate(db) }
        guard case .nonSequentialVersion = error else {
            Issue.record("unexpected \(error)")
            return
        }
        #expect(try db.userVersion == 0)
    }

    @Test func failingMigrationIsRolledBackAndStopsAtPreviousVersion() throws {
        let db = try Connection.inMemory()
        var m = Migrator()
        m.add(version: 1, name: "ok", sql: "CREATE TABLE a(x)")
        m.add(version: 2, name: "broken", sql: "CREATE TABLE b(x); INSERT INTO missing VALUES (1);")
        let error = try #require(throws: SQLiteError.self) { try m.migrate(db) }
        #expect(error.message.contains("no such table: missing"))
        #expect(try db.userVersion == 1)
        #expect(try db.scalarInt("SELECT count(*) FROM sqlite_master WHERE name = 'b'") == 0)
    }
}
