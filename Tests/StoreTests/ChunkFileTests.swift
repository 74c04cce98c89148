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

    @Test("a store's chunks live beside it: their bytes in a pack, indexed in a file of their own")
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
        #expect(try store.chunkDB.scalarInt("SELECT count(*) FROM packed") == Int64(info.manifest.chunks.count))
        #expect(try store.db.scalarInt("SELECT count(*) FROM sqlite_master WHERE name = 'chunks'") == 0)
        #expect(try store.chunkDB.scalarInt("SELECT count(*) FROM sqlite_master WHERE name = 'chunks'") == 0)
        let packPath = directory.path + "/store.chunks.pack"
        #expect(try FileManager.default.attributesOfItem(atPath: packPath)[.size] as? Int == bytes.count)
        // The same bytes again add nothing.
        _ = try store.putFile("images/b.jpg", bytes: bytes, signer: alice, nowMillis: 2_000)
        #expect(try FileManager.default.attributesOfItem(atPath: packPath)[.size] as? Int == bytes.count)
        // Opened again (as by a second process), the same chunks are there.
        let again = try Store(path: store.path)
        #expect(try again.readFile("images/a.jpg") == bytes)
        #expect(try again.integrityCheck() == ["ok"])
    }

    /// A file as an older version left it: `migrations` applied, with `chunks` as blobs in its
    /// `chunks` table.
    func oldFile(at path: String, pageSize: Int = 4096, migrations: [Migration], chunks: [[UInt8]]) throws {
        let db = try Connection(path: path)
        try db.execute("PRAGMA page_size = \(pageSize)")
        _ = try db.configureForDurability()
        try Migrator(migrations).migrate(db)
        for bytes in chunks {
            try db.run("INSERT INTO chunks(hash, bytes) VALUES (?, ?)", [.blob(BLAKE2b.digest256(bytes).bytes), .blob(bytes)])
        }
    }

    /// A store file as an older version left it: migrations 1 to 3, chunks in `chunks`.
    func oldStore(at path: String, chunks: [[UInt8]]) throws {
        try oldFile(at: path, migrations: Array(Schema.migrations.prefix(3)), chunks: chunks)
    }

    @Test("an older store's chunks move to the chunk file when it is opened, and its table goes")
    func migration() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.path + "/store.sqlite"
        let chunks = (0..<5).map { ImageFixtures.noise(Store.chunkSize - $0, seed: UInt64($0)) }
        try oldStore(at: path, chunks: chunks)
        let store = try Store(path: path)
        #expect(try store.db.userVersion == 15)
        #expect(try store.db.scalarInt("SELECT count(*) FROM sqlite_master WHERE name = 'chunks'") == 0)
        for bytes in chunks {
            #expect(try store.chunk(BLAKE2b.digest256(bytes)) == bytes)
        }
        #expect(try store.chunkDB.scalarInt("SELECT count(*) FROM packed") == Int64(chunks.count))
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
        let chunkFile = try ChunkStore.open(path: ChunkStore.chunkPath(forStoreAt: path))
        try chunkFile.db.transaction(.immediate) {
            _ = try chunkFile.append(chunks.prefix(2).map { (BLAKE2b.digest256($0), $0[...]) })
        }
        let store = try Store(path: path)
        #expect(try store.chunkDB.scalarInt("SELECT count(*) FROM packed") == 3)
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

    /// A chunk index as the previous version left it: chunks as blobs in 64 KiB pages.
    func oldChunkFile(at path: String, chunks: [[UInt8]]) throws {
        let firstMigration = ChunkStore.migrator(pack: try ChunkPack(path: ":memory:")).migrations.prefix(1)
        try oldFile(at: path, pageSize: 65536, migrations: Array(firstMigration), chunks: chunks)
    }

    @Test("chunks kept as blobs move to the pack when the index is opened, and their space is given back")
    func blobsToPack() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.path + "/store.sqlite"
        let chunks = (0..<12).map { ImageFixtures.noise(Store.chunkSize - 7 * $0, seed: UInt64(20 + $0)) }
        try oldChunkFile(at: ChunkStore.chunkPath(forStoreAt: path), chunks: chunks)
        let before = try FileManager.default.attributesOfItem(atPath: directory.path + "/store.chunks.sqlite")[.size] as! Int
        let store = try Store(path: path)
        #expect(try store.chunkDB.userVersion == 2)
        #expect(try store.chunkDB.scalarInt("SELECT count(*) FROM sqlite_master WHERE name = 'chunks'") == 0)
        for bytes in chunks { #expect(try store.chunk(BLAKE2b.digest256(bytes)) == bytes) }
        let pack = try FileManager.default.attributesOfItem(atPath: directory.path + "/store.chunks.pack")[.size] as! Int
        #expect(pack == chunks.reduce(0) { $0 + $1.count })
        try store.chunkDB.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        let after = try FileManager.default.attributesOfItem(atPath: directory.path + "/store.chunks.sqlite")[.size] as! Int
        #expect(after < before / 2)
        #expect(try store.integrityCheck() == ["ok"])
    }

    @Test("bytes of an append that never committed are written over by the next one")
    func uncommittedAppend() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.path + "/store.chunks.sqlite"
        let first = ImageFixtures.noise(5000, seed: 31), lost = ImageFixtures.noise(7000, seed: 32), next = ImageFixtures.noise(6000, seed: 33)
        let chunks = try ChunkStore.open(path: path)
        try chunks.db.transaction(.immediate) { _ = try chunks.append([(BLAKE2b.digest256(first), first[...])]) }
        // The append's bytes reach the pack, then its transaction fails and rolls back.
        struct Cut: Error {}
        #expect(throws: Cut.self) {
            try chunks.db.transaction(.immediate) {
                _ = try chunks.append([(BLAKE2b.digest256(lost), lost[...])])
                throw Cut()
            }
        }
        #expect(try !chunks.has(BLAKE2b.digest256(lost)))
        // Another connection and pack descriptor, as another process would have.
        let other = try ChunkStore.open(path: path)
        try other.db.transaction(.immediate) { _ = try other.append([(BLAKE2b.digest256(next), next[...])]) }
        #expect(try other.db.scalarInt("SELECT offset FROM packed WHERE hash = ?", [.blob(BLAKE2b.digest256(next).bytes)]) == 5000)
        #expect(try chunks.bytes(BLAKE2b.digest256(next)) == next)
        #expect(try chunks.bytes(BLAKE2b.digest256(first)) == first)
    }

    @Test("an index entry past the end of a pack cut short is reported, not read")
    func truncatedPack() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.path + "/store.chunks.sqlite"
        let bytes = ImageFixtures.noise(9000, seed: 41)
        do {
            let chunks = try ChunkStore.open(path: path)
            try chunks.db.transaction(.immediate) { _ = try chunks.append([(BLAKE2b.digest256(bytes), bytes[...])]) }
        }
        #expect(truncate(directory.path + "/store.chunks.pack", 4000) == 0)
        let chunks = try ChunkStore.open(path: path)
        #expect(try chunks.has(BLAKE2b.digest256(bytes)))
        #expect(throws: StoreError.self) { try chunks.bytes(BLAKE2b.digest256(bytes)) }
        #expect(try chunks.mismatches().count == 1)
    }

    @Test("an index entry with a negative offset or length is reported, not read")
    func negativeEntry() throws {
        let chunks = try ChunkStore.open(path: ":memory:")
        let bytes = ImageFixtures.noise(9000, seed: 42)
        try chunks.db.transaction(.immediate) { _ = try chunks.append([(BLAKE2b.digest256(bytes), bytes[...])]) }
        #expect(try chunks.bytes(BLAKE2b.digest256(bytes)) == bytes)  // the size is known from here on
        let (short, early) = (BLAKE2b.digest256([1]), BLAKE2b.digest256([2]))
        try chunks.db.run("INSERT INTO packed(hash, offset, length) VALUES (?, 100, -50), (?, -10, 20)",
                          [.blob(short.bytes), .blob(early.bytes)])
        #expect(throws: StoreError.self) { try chunks.bytes(short) }
        #expect(throws: StoreError.self) { try chunks.bytes(early) }
        #expect(try chunks.mismatches().count == 2)
    }

    @Test("the integrity check reads every chunk and names one whose bytes changed in the pack")
    func integrityOfPack() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let store = try Store(path: directory.path + "/store.sqlite")
        // 20 chunks: more than one group of the eight hashed at once.
        let bytes = ImageFixtures.jpeg() + ImageFixtures.noise(19 * Store.chunkSize, seed: 51)
        let info = try store.putFile("images/c.jpg", bytes: bytes, signer: alice, nowMillis: 1_000)
        #expect(info.manifest.chunks.count == 20)
        #expect(try store.integrityCheck() == ["ok"])
        let fd = open(directory.path + "/store.chunks.pack", O_WRONLY)
        #expect(fd >= 0)
        for chunk in [1, 13] {
            var flipped = bytes[chunk * Store.chunkSize + 10] ^ 0xFF
            #expect(pwrite(fd, &flipped, 1, off_t(chunk * Store.chunkSize + 10)) == 1)
        }
        close(fd)
        #expect(try store.integrityCheck() == [1, 13].map { "chunks: chunk \(info.manifest.chunks[$0]) does not match its hash" })
    }

    @Test("an empty chunk (a manifest may name the hash of nothing) is stored and read back")
    func emptyChunk() throws {
        let chunks = try ChunkStore.open(path: ":memory:")
        let empty = [UInt8]()
        try chunks.db.transaction(.immediate) { _ = try chunks.append([(BLAKE2b.digest256(empty), empty[...])]) }
        #expect(try chunks.bytes(BLAKE2b.digest256(empty)) == [])
        #expect(try chunks.mismatches().isEmpty)
    }
}
