import Testing
import SQLite

/// Blobs read where SQLite holds them, without a copy.
@Suite("Blobs read in place")
struct BlobInPlaceTests {
    @Test("a blob read in place has the stored bytes; NULL reads as empty")
    func withBlob() throws {
        let db = try Connection.inMemory()
        try db.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, b BLOB)")
        let big = (0..<70_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        try db.run("INSERT INTO t(b) VALUES (?), (NULL)", [.blob(big)])
        let read = try db.all("SELECT b FROM t ORDER BY id") { row in row.withBlob(0) { Array($0) } }
        #expect(read == [big, []])
    }
}
