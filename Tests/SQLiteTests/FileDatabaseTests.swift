import Foundation
import Testing
import SQLite

@Suite("File databases")
struct FileDatabaseTests {
    @Test func durabilityConfigurationTurnsOnWAL() throws {
        let dir = try TempDirectory()
        defer { dir.remove() }
        let path = dir.path("chat.sqlite")
        do {
            let db = try Connection(path: path)
            #expect(try db.configureForDurability() == .wal)
            #expect(try db.journalMode == .wal)
            #expect(try db.scalarInt("PRAGMA synchronous") == 2)  // FULL
            #expect(try db.foreignKeysEnabled)
            try db.execute("CREATE TABLE t(x)")
            try db.run("INSERT INTO t VALUES (1)")
        }
        #expect(FileManager.default.fileExists(atPath: path))
        // WAL is persistent: a fresh connection sees it, and the data.
        let reopened = try Connection(path: path)
        #expect(try reopened.journalMode == .wal)
        #expect(try reopened.scalarInt("SELECT x FROM t") == 1)
    }

    @Test("a connection opens through a named VFS, and an unknown VFS name is an error that names it")
    func namedVFS() throws {
        let dir = try TempDirectory()
        defer { dir.remove() }
        let path = dir.path("vfs.sqlite")
        let db = try Connection(path: path, vfs: "unix")
        #expect(db.vfs == "unix")
        try db.execute("CREATE TABLE t(x); INSERT INTO t VALUES (1)")
        #expect(try Connection(path: path).vfs == nil)
        #expect(try Connection(path: path).scalarInt("SELECT x FROM t") == 1)
        do {
            _ = try Connection(path: path, vfs: "no-such-vfs")
            Issue.record("a connection opened through a VFS that does not exist")
        } catch {
            #expect(error.code == SQLiteError.error)
            #expect(error.message.contains("no-such-vfs"), "\(error)")
        }
    }

    @Test func inMemoryDatabaseReportsMemoryMode() throws {
        let db = try Connection.inMemory()
        #expect(try db.configureForDurability() == .memory)
    }

    @Test func integrityCheckIsOK() throws {
        let dir = try TempDirectory()
        defer { dir.remove() }
        let db = try Connection(path: dir.path("ok.sqlite"))
        try db.configureForDurability()
        try db.execute("CREATE TABLE t(x UNIQUE); INSERT INTO t VALUES (1), (2), (3);")
        #expect(try db.integrityCheck() == ["ok"])
    }

    @Test func fileThatIsNotADatabaseIsCorrupt() throws {
        let dir = try TempDirectory()
        defer { dir.remove() }
        let path = dir.path("notes.txt")
        try Data(String(repeating: "this is not an SQLite database\n", count: 100).utf8)
            .write(to: URL(fileURLWithPath: path))
        let error = try #require(throws: SQLiteError.self) { try Connection(path: path) }
        #expect(error.isCorrupt)
        #expect(error.code == SQLiteError.notADatabase)
        #expect(error.message.contains("not a database"))
    }

    @Test func readOnlyConnectionRefusesWrites() throws {
        let dir = try TempDirectory()
        defer { dir.remove() }
        let path = dir.path("ro.sqlite")
        do {
            let writer = try Connection(path: path)
            try writer.execute("CREATE TABLE t(x); INSERT INTO t VALUES (1);")
        }
        let reader = try Connection(path: path, readOnly: true)
        #expect(reader.isReadOnly)
        #expect(try reader.scalarInt("SELECT x FROM t") == 1)
        let error = try #require(throws: SQLiteError.self) { try reader.run("INSERT INTO t VALUES (2)") }
        #expect(error.isReadOnly)
        #expect(error.message.contains("readonly"))
        #expect(error.description.hasPrefix("SQLite error 8 (readonly): attempt to write a readonly database"))
    }

    @Test func missingFileWithoutCreateCannotOpen() throws {
        let dir = try TempDirectory()
        defer { dir.remove() }
        let path = dir.path("absent.sqlite")
        let error = try #require(throws: SQLiteError.self) { try Connection(path: path, create: false) }
        #expect(error.isCantOpen)
        let readOnly = try #require(throws: SQLiteError.self) { try Connection(path: path, readOnly: true) }
        #expect(readOnly.isCantOpen)
        #expect(!FileManager.default.fileExists(atPath: path))
    }

    @Test func secondConnectionSeesCommittedData() throws {
        let dir = try TempDirectory()
        defer { dir.remove() }
        let path = dir.path("shared.sqlite")
        let a = try Connection(path: path)
        try a.configureForDurability()
        try a.execute("CREATE TABLE t(x)")
        let b = try Connection(path: path)
        try a.transaction { try a.run("INSERT INTO t VALUES (1)") }
        #expect(try b.scalarInt("SELECT count(*) FROM t") == 1)
    }

    @Test func lockedDatabaseReportsBusyAfterTimeout() throws {
        let dir = try TempDirectory()
        defer { dir.remove() }
        let path = dir.path("busy.sqlite")
        let a = try Connection(path: path)
        try a.configureForDurability()
        try a.execute("CREATE TABLE t(x)")
        let b = try Connection(path: path)
        try b.setBusyTimeout(milliseconds: 50)
        try a.execute("BEGIN IMMEDIATE")
        let error = try #require(throws: SQLiteError.self) {
            try b.transaction { try b.run("INSERT INTO t VALUES (1)") }
        }
        #expect(error.isBusy)
        #expect(!b.isInTransaction)
        try a.execute("COMMIT")
        try b.transaction { try b.run("INSERT INTO t VALUES (1)") }
        #expect(try a.scalarInt("SELECT count(*) FROM t") == 1)
    }
}
