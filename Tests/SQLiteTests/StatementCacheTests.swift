import Testing
import SQLite

@Suite("Statement cache")
struct StatementCacheTests {
    @Test func sameSQLGivesSameStatementObject() throws {
        let db = try Connection.inMemory()
        let a = try db.cachedStatement("SELECT ?")
        let b = try db.cachedStatement("SELECT ?")
        let c = try db.cachedStatement("SELECT ? + 0")
        #expect(a === b)
        #expect(a !== c)
        #expect(try db.prepare("SELECT ?") !== a)
    }

    @Test func reuseWithDifferentBindings() throws {
        let db = try Connection.inMemory()
        try db.execute("CREATE TABLE t(k TEXT, v INTEGER)")
        for (k, v) in [("a", 1), ("b", 2), ("c", 3)] {
            try db.run("INSERT INTO t VALUES (?, ?)", [.text(k), SQLValue(v)])
        }
        let sql = "SELECT v FROM t WHERE k = ?"
        #expect(try db.scalarInt(sql, ["a"]) == 1)
        #expect(try db.scalarInt(sql, ["c"]) == 3)
        #expect(try db.scalarInt(sql, ["zz"]) == nil)
        #expect(try db.scalarInt(sql, ["b"]) == 2)
    }

    @Test func cachedStatementComesBackResetWithBindingsCleared() throws {
        let db = try Connection.inMemory()
        let sql = "SELECT ? UNION ALL SELECT 2"
        let first = try db.cachedStatement(sql)
        try first.bind([.text("bound")])
        #expect(try first.step())
        #expect(first.text(0) == "bound")
        // Abandoned mid-iteration; the next request must start over, without old bindings.
        let again = try db.cachedStatement(sql)
        #expect(again === first)
        #expect(try again.step())
        #expect(again.isNull(0))
        #expect(try again.step())
        #expect(again.int64(0) == 2)
        #expect(try !again.step())
    }

    @Test("more statements than the recent ones looked at first: each SQL still gets its own statement, built once, with its bindings cleared whichever way it is found")
    func manyStatementsInTurn() throws {
        let db = try Connection.inMemory()
        // Dynamic strings too: equal text from different storage finds the same statement.
        let sqls = (0..<20).map { "SELECT ? + \($0)" }
        var first = [String: Statement]()
        for round in 0..<3 {
            for (offset, sql) in sqls.enumerated() {
                let statement = try db.cachedStatement(String(decoding: Array(sql.utf8), as: UTF8.self))
                if round == 0 { first[sql] = statement } else { #expect(statement === first[sql]) }
                #expect(try statement.step())
                #expect(statement.isNull(0))  // nothing bound since it was last used
                statement.reset()
                try statement.bind([SQLValue(round)])
                #expect(try statement.step())
                #expect(statement.int64(0) == Int64(round + offset))
                statement.reset()
            }
        }
        // Cleared by its user, handed out again: still no binding.
        let statement = try db.cachedStatement(sqls[0])
        statement.clearBindings()
        statement.clearBindings()
        #expect(try db.cachedStatement(sqls[0]).step())
        #expect(statement.isNull(0))
    }

    @Test func preparedStatementRunsRepeatedly() throws {
        let db = try Connection.inMemory()
        try db.execute("CREATE TABLE t(x INTEGER, y TEXT)")
        let insert = try db.prepare("INSERT INTO t VALUES (?, ?)")
        try db.transaction {
            for i in 0..<100 { try insert.run([SQLValue(i), .text("row \(i)")]) }
        }
        #expect(try db.scalarInt("SELECT count(*) FROM t") == 100)
        #expect(try db.scalarInt("SELECT sum(x) FROM t") == 4950)
        let select = try db.prepare("SELECT x, y FROM t WHERE x >= ? ORDER BY x")
        try select.bind([98])
        var rows: [[SQLValue]] = []
        while try select.step() { rows.append(select.values) }
        select.reset()
        #expect(rows == [[98, "row 98"], [99, "row 99"]])
        #expect(select.columnCount == 2)
        #expect(select.columnName(1) == "y")
        #expect(select.columnIndex(named: "y") == 1)
    }

    @Test func statementMayOutliveConnectionObject() throws {
        var db: Connection? = try Connection.inMemory()
        let statement = try db!.prepare("SELECT 41 + 1")
        db = nil  // close_v2 defers the close until the statement is finalized
        #expect(try statement.step())
        #expect(statement.int64(0) == 42)
    }
}
