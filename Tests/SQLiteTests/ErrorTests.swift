import Testing
import SQLite

@Suite("Errors")
struct ErrorTests {
    @Test func strictTableRejectsWrongType() throws {
        let db = try Connection.inMemory()
        try db.execute("CREATE TABLE s(x INTEGER NOT NULL) STRICT")
        let error = try #require(throws: SQLiteError.self) {
            try db.run("INSERT INTO s(x) VALUES (?)", ["not a number"])
        }
        #expect(error.code == SQLiteError.constraint)
        #expect(error.extendedCode == SQLiteError.constraintDatatype)
        #expect(error.isConstraint)
        #expect(error.message.contains("cannot store TEXT value in INTEGER column s.x"))
        #expect(error.sql == "INSERT INTO s(x) VALUES (?)")
        // The failed statement left nothing behind and the cache still works.
        try db.run("INSERT INTO s(x) VALUES (?)", [1])
        #expect(try db.scalarInt("SELECT count(*) FROM s") == 1)
    }

    @Test func uniqueViolationDescription() throws {
        let db = try Connection.inMemory()
        try db.execute("CREATE TABLE t(x UNIQUE)")
        try db.run("INSERT INTO t VALUES (1)")
        let error = try #require(throws: SQLiteError.self) { try db.run("INSERT INTO t VALUES (1)") }
        #expect(error.extendedCode == SQLiteError.constraintUnique)
        #expect(
            error.description
                == "SQLite error 19 (constraint): UNIQUE constraint failed: t.x (while running: INSERT INTO t VALUES (1))")
    }

    @Test func syntaxErrorNamesTheStatement() throws {
        let db = try Connection.inMemory()
        let error = try #require(throws: SQLiteError.self) {
            try db.execute("CREATE TABLE a(x); SELEKT 1;")
        }
        #expect(error.code == SQLiteError.error)
        #expect(error.message.contains("syntax error"))
        #expect(error.sql?.hasPrefix("SELEKT") == true)
        // The first statement of the script did run.
        #expect(try db.scalarInt("SELECT count(*) FROM sqlite_master WHERE name = 'a'") == 1)
    }

    @Test func wrongParameterCountIsRefused() throws {
        let db = try Connection.inMemory()
        let tooFew = try #require(throws: SQLiteError.self) { try db.run("SELECT ?, ?", [1]) }
        #expect(tooFew.code == SQLiteError.range)
        let tooMany = try #require(throws: SQLiteError.self) { try db.run("SELECT ?", [1, 2]) }
        #expect(tooMany.code == SQLiteError.range)
        let badIndex = try #require(throws: SQLiteError.self) {
            try db.prepare("SELECT ?").bind(.integer(1), at: 2)
        }
        #expect(badIndex.code == SQLiteError.range)
    }

    @Test func prepareRejectsScriptsAndEmptySQL() throws {
        let db = try Connection.inMemory()
        #expect(throws: SQLiteError.self) { try db.prepare("SELECT 1; SELECT 2") }
        #expect(throws: SQLiteError.self) { try db.prepare("  -- nothing\n") }
        // Trailing semicolons, whitespace and comments are fine.
        let statement = try db.prepare("SELECT 1; -- done\n ")
        #expect(try statement.step())
        #expect(statement.int64(0) == 1)
    }

    @Test func queryRethrowsCallerErrorsUnchanged() throws {
        struct Stop: Error {}
        let db = try Connection.inMemory()
        #expect(throws: Stop.self) {
            try db.query("SELECT 1 UNION ALL SELECT 2") { _ in throw Stop() }
        }
        // The cached statement was reset and is usable again.
        #expect(try db.all("SELECT 1 UNION ALL SELECT 2") { $0.int64(0) } == [1, 2])
    }
}
