import Testing
import SQLite

@Suite("Values round trip")
struct ValueRoundTripTests {
    static let samples: [SQLValue] = [
        .null,
        .integer(0), .integer(42), .integer(Int64.max), .integer(Int64.min),
        .real(3.25), .real(-0.5), .real(1e300),
        .text(""), .text("hello"), .text("héllo wörld ✓ 中文 🚀"), .text("a\u{0}b"),
        .blob([]), .blob([0]), .blob([0, 1, 0, 255, 0]), .blob(Array(0...255)),
    ]

    @Test func everyValueSurvivesInsertAndSelect() throws {
        let db = try Connection.inMemory()
        try db.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, v ANY)")
        for sample in Self.samples {
            try db.run("INSERT INTO t(v) VALUES (?)", [sample])
        }
        let back = try db.all("SELECT v FROM t ORDER BY id") { $0.value(0) }
        #expect(back == Self.samples)
    }

    @Test func emptyBlobIsNotNullAndEmptyTextIsNotNull() throws {
        let db = try Connection.inMemory()
        try db.execute("CREATE TABLE t(b BLOB, s TEXT)")
        try db.run("INSERT INTO t VALUES (?, ?)", [.blob([]), .text("")])
        let types = try db.firstValues("SELECT typeof(b), typeof(s), length(b), length(s) FROM t")
        #expect(types == [.text("blob"), .text("text"), .integer(0), .integer(0)])
    }

    @Test func typedAccessorsReadEachColumn() throws {
        let db = try Connection.inMemory()
        try db.execute("CREATE TABLE t(i INTEGER, r REAL, s TEXT, b BLOB, n)")
        try db.run("INSERT INTO t VALUES (?, ?, ?, ?, ?)", [7, 2.5, "ünï\u{0}code", .blob([0, 9, 0]), nil])
        let row = try #require(try db.first("SELECT i, r, s, b, n FROM t") { row in
            (row.int64(0), row.double(1), row.text(2), row.blob(3), row.isNull(4), row.isNull(0), row.columnName(2))
        })
        #expect(row.0 == 7)
        #expect(row.1 == 2.5)
        #expect(row.2 == "ünï\u{0}code")
        #expect(row.3 == [0, 9, 0])
        #expect(row.4 == true)
        #expect(row.5 == false)
        #expect(row.6 == "s")
    }

    @Test func crudRoundTrip() throws {
        let db = try Connection.inMemory()
        try db.execute("CREATE TABLE person(id INTEGER PRIMARY KEY, name TEXT NOT NULL, photo BLOB)")
        try db.run("INSERT INTO person(name, photo) VALUES (?, ?)", ["Åsa", .blob([1, 2, 3])])
        let id = db.lastInsertRowID
        #expect(db.changes == 1)
        #expect(try db.scalarText("SELECT name FROM person WHERE id = ?", [.integer(id)]) == "Åsa")

        try db.run("UPDATE person SET name = ?, photo = ? WHERE id = ?", ["Bo", .blob([]), .integer(id)])
        #expect(db.changes == 1)
        let updated = try db.firstValues("SELECT name, photo FROM person WHERE id = ?", [.integer(id)])
        #expect(updated == [.text("Bo"), .blob([])])

        try db.run("DELETE FROM person WHERE id = ?", [.integer(id)])
        #expect(db.changes == 1)
        #expect(try db.scalarInt("SELECT count(*) FROM person") == 0)
        #expect(try db.firstValues("SELECT * FROM person") == nil)
        #expect(db.totalChanges == 3)
    }

    @Test func scalarHelpersDistinguishNoRowAndNull() throws {
        let db = try Connection.inMemory()
        #expect(try db.scalarInt("SELECT NULL") == nil)
        #expect(try db.scalarInt("SELECT 5 WHERE 0") == nil)
        #expect(try db.scalar("SELECT NULL") == .null)
        #expect(try db.scalar("SELECT 5 WHERE 0") == nil)
        #expect(try db.scalarInt("SELECT ? + ?", [2, 3]) == 5)
    }

    @Test func valueAccessorsAndLiterals() {
        let values: [SQLValue] = [1, 2.5, "x", nil, true]
        #expect(values == [.integer(1), .real(2.5), .text("x"), .null, .integer(1)])
        #expect(SQLValue.integer(3).doubleValue == 3)
        #expect(SQLValue.text("3").int64Value == nil)
        #expect(SQLValue.blob([1]).blobValue == [1])
        #expect(SQLValue.null.isNull)
        #expect(SQLValue.text("it's").description == "'it''s'")
        #expect(SQLValue.blob([0xAB, 0x01]).description == "x'AB01'")
    }
}
