import Foundation
import SQLite
import Testing
@testable import Store
import TestSupport

/// The page size a store is made with, and the WAL a running node lets grow between its
/// background checkpoints (README, "Memory and storage at scale").
@Suite("Store page size")
struct PageSizeTests {
    @Test("a new store's pages are 16 KiB, and a checkpoint runs every 4 MiB of WAL")
    func newStoresTakeLargerPages() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let store = try Store(path: directory.path + "/store.sqlite")
        #expect(try store.db.scalarInt("PRAGMA page_size") == 16384)
        try store.checkpointInBackground()
        #expect(store.checkpointFrames == 256)
    }

    @Test("a store made before keeps its 4 KiB pages, and its checkpoints come at the same 4 MiB of WAL")
    func olderStoresKeepTheirPages() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.path + "/store.sqlite"
        try FileManager.default.copyItem(atPath: ValuesInRecordsTests.fixtures + "/store-version-9.sqlite", toPath: path)
        let store = try Store(path: path)
        #expect(try store.db.scalarInt("PRAGMA page_size") == 4096)
        try store.checkpointInBackground()
        #expect(store.checkpointFrames == 1024)
        #expect(try store.integrityCheck() == ["ok"])
    }
}
