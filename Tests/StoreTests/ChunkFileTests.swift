import Foundation
import Crypto
import SQLite
import Testing
@testable import Store

/// The chunk file beside the store: its name and page size, and the migration that moves the
/// chunks of an older store into it.
@Suite("Chunk file")
struct ChunkFileTests {
    let alice = testAuthors[0]

    @Test("a store's chunks live beside it, in a file of 64 KiB pages; the store keeps 4 KiB pages")
    func layout() throws {
        #expect(ChunkStore.chunkPath(forStoreAt: "/d/store.sqlite") == "/d/store.chunks.sqlite")
        #expect(ChunkStore.chunkPath(forStoreAt: "/d/parts") == "/d/parts.chunks.sqlite")
        #expect(ChunkStore.chunkPath(forStoreAt: ":memory:") == ":memory:")
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let store = try Store(path: directory.path + "/store.sqlite")
        #expect(store.chunkPath == directory.path + "/store.chunks.sqlite")
        let bytes = ImageFixtures.jpeg() + ImageFixtures.noise(3 * Store.chunkSize, seed: 3)
        let info = try store.putFile("images/a.jpg", bytes: bytes, signer: alice, nowMillis: 1_000)
        #expect(try store.chunkDB.scalarInt("PRAGMA page_size") == 65536)
        #expect(try store.db.scalarInt("PRAGMA page_size") == 4096)
        #expect(try store.chunkDB.scalarInt("SELECT count(*) FROM chunks") == Int64(info.manifest.chunks.count))
        #expect(try store.db.scalarInt("SELECT count(*) FROM sqlite_master WHERE name = 'chunks'") == 0)
        // Opened again (as by a second process), the same chunks are there.
        let again = try Store(path: store.path)
        #expect(try again.readFile("images/a.jpg") == bytes)
        #expect(try again.integrityCheck() == ["ok"])
    }

    /// A store file as the previous version left it: migrations 1 to 3, chunks in `chunks`.
    func oldStore(at path: String, chunks: [[UInt8]]) throws {
        let db = try Connection(path: path)
        _ = try db.configureForDurability()
        try Migrator(Array(Schema.migrations.prefix(3))).migrate(db)
        for bytes in chunks {
            try db.run("INSERT INTO chunks(hash, bytes) VALUES (?, ?)", [.blob(BLAKE2b.digest256(bytes).bytes), .blob(bytes)])
        }
    }

    @Test("an older store's chunks move to the chunk file when it is opened, and its table goes")
    func migration() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.path + "/store.sqlite"
        let chunks = (0..<5).map { ImageFixtures.noise(Store.chunkSize - $0, seed: UInt64($0)) }
        try oldStore(at: path, chunks: chunks)
        let store = try Store(path: path)
        #expect(try store.db.userVersion == 5)
        #expect(try store.db.scalarInt("SELECT count(*) FROM sqlite_master WHERE name = 'chunks'") == 0)
        for bytes in chunks {
            #expect(try store.chunk(BLAKE2b.digest256(bytes)) == bytes)
        }
        #expect(try store.chunkDB.scalarInt("SELECT count(*) FROM chunks") == Int64(chunks.count))
        #expect(try store.integrityCheck() == ["ok"])
    }

    @Test("a migration cut short after the copy runs again without duplicating a chunk")
    func migrationAgain() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.path + "/store.sqlite"
        let chunks = (0..<3).map { ImageFixtures.noise(1000 + $0, seed: UInt64(10 + $0)) }
        try oldStore(at: path, chunks: chunks)
        // As if the copy had committed and the process died before the store's file dropped
        // its table: the chunk file already holds two of them.
        let chunkFile = ChunkStore(db: try ChunkStore.open(path: ChunkStore.chunkPath(forStoreAt: path)))
        for bytes in chunks.prefix(2) { try chunkFile.put(BLAKE2b.digest256(bytes), bytes[...]) }
        let store = try Store(path: path)
        #expect(try store.chunkDB.scalarInt("SELECT count(*) FROM chunks") == 3)
        for bytes in chunks {
            #expect(try store.chunk(BLAKE2b.digest256(bytes)) == bytes)
        }
        #expect(try store.db.scalarInt("SELECT count(*) FROM sqlite_master WHERE name = 'chunks'") == 0)
    }

    @Test("a chunk is served without a copy of its own, and an unknown one is reported missing")
    func withChunk() throws {
        let store = try memoryStore()
        let bytes = ImageFixtures.jpeg() + ImageFixtures.noise(Store.chunkSize, seed: 8)
        let info = try store.putFile("images/b.jpg", bytes: bytes, signer: alice, nowMillis: 1_000)
        var seen = [UInt8]()
        #expect(try store.withChunk(info.manifest.chunks[0]) { seen = Array($0) })
        #expect(seen == Array(bytes.prefix(Store.chunkSize)))
        var called = false
        #expect(try !store.withChunk(BLAKE2b.digest256([1, 2, 3])) { _ in called = true })
        #expect(!called)
    }
}
