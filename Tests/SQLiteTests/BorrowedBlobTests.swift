import Testing
import SQLite

/// Blobs bound without a copy, and read without one.
@Suite("Borrowed blobs")
struct BorrowedBlobTests {
    @Test("a borrowed blob is stored as given, empty included, and is unbound after the call")
    func borrowedBlob() throws {
        let db = try Connection.inMemory()
        try db.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, b BLOB)")
        let statement = try db.prepare("INSERT INTO t(b) VALUES (?)")
        let samples: [[UInt8]] = [Array(0...255), [], [0, 0, 7]]
        for sample in samples {
            try statement.withBorrowedBlob(sample[...], at: 1) { _ = try statement.step() }
        }
        // The binding was cleared: stepping again inserts NULL, not a pointer to freed bytes.
        _ = try statement.step()
        let back = try db.all("SELECT b, typeof(b) FROM t ORDER BY id") { [$0.value(0), $0.value(1)] }
        #expect(back == samples.map { [.blob($0), .text("blob")] } + [[.null, .text("null")]])
    }

    @Test("a blob read in place has the stored bytes; NULL reads as empty")
    func withBlob() throws {
        let db = try Connection.inMemory()
        try db.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, b BLOB)")
        let big = (0..<70_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        try db.run("INSERT INTO t(b) VALUES (?), (NULL)", [.blob(big)])
        let read = try db.all("SELECT b FROM t ORDER BY id") { row in row.withBlob(0) { Array($0) } }
        #expect(read == [big, []])
    }

    @Test("a step that fails inside the call still leaves the statement reset and unbound")
    func failingStep() throws {
        let db = try Connection.inMemory()
        try db.execute("CREATE TABLE t(b BLOB NOT NULL CHECK (length(b) < 3))")
        let statement = try db.prepare("INSERT INTO t(b) VALUES (?)")
        #expect(throws: SQLiteError.self) {
            try statement.withBorrowedBlob([1, 2, 3, 4][...], at: 1) { _ = try statement.step() }
        }
        try statement.withBorrowedBlob([1][...], at: 1) { _ = try statement.step() }
        #expect(try db.scalarInt("SELECT count(*) FROM t") == 1)
    }
}
