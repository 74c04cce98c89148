import Testing
import SQLite

@Suite("Transactions")
struct TransactionTests {
    struct Boom: Error, Equatable {}

    func makeDB() throws -> Connection {
        let db = try Connection.inMemory()
        try db.execute("CREATE TABLE t(x INTEGER)")
        return db
    }

    func values(_ db: Connection) throws -> [Int64] {
        try db.all("SELECT x FROM t ORDER BY x") { $0.int64(0) }
    }

    @Test func commitsOnSuccess() throws {
        let db = try makeDB()
        let result = try db.transaction {
            #expect(db.isInTransaction)
            try db.run("INSERT INTO t VALUES (1)")
            return "done"
        }
        #expect(result == "done")
        #expect(!db.isInTransaction)
        #expect(try values(db) == [1])
    }

    @Test(arguments: [TransactionKind.deferred, .immediate, .exclusive])
    func rollsBackOnThrownErrorAndRethrowsIt(kind: TransactionKind) throws {
        let db = try makeDB()
        #expect(throws: Boom()) {
            try db.transaction(kind) {
                try db.run("INSERT INTO t VALUES (1)")
                throw Boom()
            }
        }
        #expect(!db.isInTransaction)
        #expect(try values(db) == [])
    }

    @Test func sqlErrorInsideRollsBackEarlierWrites() throws {
        let db = try makeDB()
        try db.execute("CREATE UNIQUE INDEX tx ON t(x)")
        let error = try #require(throws: SQLiteError.self) {
            try db.transaction {
                try db.run("INSERT INTO t VALUES (1)")
                try db.run("INSERT INTO t VALUES (1)")
            }
        }
        #expect(error.isConstraint)
        #expect(try values(db) == [])
    }

    @Test func nestedFailureRollsBackOnlyInnerPart() throws {
        let db = try makeDB()
        try db.transaction {
            try db.run("INSERT INTO t VALUES (1)")
            #expect(throws: Boom.self) {
                try db.transaction {
                    try db.run("INSERT INTO t VALUES (2)")
                    throw Boom()
                }
            }
            #expect(db.isInTransaction)
            try db.transaction {
                try db.run("INSERT INTO t VALUES (3)")
                // Two levels deep: commits into its parent savepoint.
                try db.transaction { try db.run("INSERT INTO t VALUES (4)") }
            }
        }
        #expect(!db.isInTransaction)
        #expect(try values(db) == [1, 3, 4])
    }

    @Test func outerFailureRollsBackCommittedInnerPart() throws {
        let db = try makeDB()
        #expect(throws: Boom.self) {
            try db.transaction {
                try db.transaction { try db.run("INSERT INTO t VALUES (1)") }
                throw Boom()
            }
        }
        #expect(try values(db) == [])
    }

    @Test func nestsInsideManualBegin() throws {
        let db = try makeDB()
        try db.execute("BEGIN")
        try db.run("INSERT INTO t VALUES (1)")
        #expect(throws: Boom.self) {
            try db.transaction {
                try db.run("INSERT INTO t VALUES (2)")
                throw Boom()
            }
        }
        try db.execute("COMMIT")
        #expect(try values(db) == [1])
    }
}
