import Foundation
import Crypto
import SQLite
import Testing
import Tree
import Wire
@testable import Store

/// The blob store: images cut into content-addressed chunks, manifests, file entries.
@Suite("Files")
struct FileStoreTests {
    let alice = testAuthors[0]
    let bob = testAuthors[1]

    /// Rows of `table`, in the chunk file for `chunks` and in the store's file otherwise.
    /// Rows of a store table; "chunks" counts the chunks held (the chunk index's entries).
    func count(_ store: Store, _ table: String) throws -> Int {
        let (db, name) = table == "chunks" ? (store.chunkDB, "packed") : (store.db, table)
        return Int(try db.scalarInt("SELECT count(*) FROM \(name)") ?? -1)
    }

    static let smallPNG = ImageFixtures.png(width: 7, height: 5) { x, y in (UInt8(x * 30), UInt8(y * 50), 200) }
    /// 300 x 300 of noise: about 270 kB, five chunks.
    static let largePNG: [UInt8] = {
        let noise = ImageFixtures.noise(300 * 300 * 3, seed: 42)
        return ImageFixtures.png(width: 300, height: 300) { x, y in
            let i = (y * 300 + x) * 3
            return (noise[i], noise[i + 1], noise[i + 2])
        }
    }()
    static let gif = ImageFixtures.animatedGIF(width: 6, height: 4, frames: 2) { f, x, y in UInt8((x + y + f) % 4) }
    static let jpeg = ImageFixtures.jpeg()

    @Test("JPEG, PNG and animated GIF round-trip byte for byte, with their sniffed types",
          arguments: [("j.jpg", jpeg, "image/jpeg"), ("p.png", smallPNG, "image/png"),
                      ("big.png", largePNG, "image/png"), ("a.gif", gif, "image/gif")])
    func roundTrip(name: String, bytes: [UInt8], type: String) throws {
        let store = try memoryStore()
        let path = "images/\(name)"
        let info = try store.putFile(path, bytes: bytes, signer: alice, nowMillis: 1_000)
        #expect(info.manifest.contentType == type)
        #expect(info.manifest.size == UInt64(bytes.count))
        #expect(info.manifest.chunks.count == (bytes.count + Store.chunkSize - 1) / Store.chunkSize)
        #expect(info.isComplete)
        #expect(try store.readFile(path) == bytes)
        #expect(try store.fileInfo(path) == info)
    }

    @Test("the fixtures are what their formats say")
    func fixtureShapes() {
        #expect(ImageType.sniff(Self.jpeg) == "image/jpeg")
        #expect(ImageType.sniff(Self.smallPNG) == "image/png")
        #expect(ImageType.sniff(Self.gif) == "image/gif")
        #expect(Self.largePNG.count > 4 * Store.chunkSize)
        // Two image descriptors: an animation.
        #expect(Self.gif.indices.filter { Self.gif[$0] == 0x2C && $0 > 0 && Self.gif[$0 - 1] == 0 }.count >= 2)
        // The PNG's checksums: IHDR's CRC as computed independently of the encoder's table.
        #expect(ImageFixtures.crc32(Array("IEND".utf8)) == 0xAE42_6082)
    }

    @Test("sizes around the chunk boundary", arguments: [1, 2, 3].flatMap { n in [n * Store.chunkSize - 1, n * Store.chunkSize, n * Store.chunkSize + 1] })
    func chunkBoundaries(size: Int) throws {
        let head = ImageFixtures.jpeg()
        let bytes = head + ImageFixtures.noise(size - head.count, seed: UInt64(size))
        let store = try memoryStore()
        let info = try store.putFile("b/\(size).jpg", bytes: bytes, signer: alice, nowMillis: 1_000)
        #expect(info.manifest.chunks.count == (size + Store.chunkSize - 1) / Store.chunkSize)
        for index in info.manifest.chunks.indices {
            let range = info.manifest.range(ofChunk: index)
            #expect(try store.chunk(info.manifest.chunks[index]) == Array(bytes[range]))
        }
        #expect(try store.readFile("b/\(size).jpg") == bytes)
    }

    @Test("the same bytes stored again add no chunks; repeated chunks are stored once")
    func deduplication() throws {
        let store = try memoryStore()
        try store.putFile("images/one.png", bytes: Self.largePNG, signer: alice, nowMillis: 1_000)
        let chunks = try count(store, "chunks")
        #expect(chunks == (Self.largePNG.count + Store.chunkSize - 1) / Store.chunkSize)
        try store.putFile("images/two.png", bytes: Self.largePNG, signer: bob, nowMillis: 2_000)
        try store.putFile("images/one.png", bytes: Self.largePNG, signer: alice, nowMillis: 3_000)
        #expect(try count(store, "chunks") == chunks)
        #expect(try store.readFile("images/two.png") == Self.largePNG)

        // Three identical chunks after the first: one row for them.
        let repeated = Self.jpeg + [UInt8](repeating: 0, count: Store.chunkSize - Self.jpeg.count)
            + [UInt8](repeating: 7, count: 3 * Store.chunkSize)
        let fresh = try memoryStore()
        let info = try fresh.putFile("r.jpg", bytes: repeated, signer: alice, nowMillis: 1_000)
        #expect(info.manifest.chunks.count == 4)
        #expect(try count(fresh, "chunks") == 2)
        #expect(try fresh.readFile("r.jpg") == repeated)
    }

    @Test("refused files get a clear error and store nothing")
    func refusals() throws {
        let store = try memoryStore()
        #expect(throws: FileError.typeMismatch(declared: "image/png", actual: "image/jpeg")) {
            try store.putFile("x.jpg", bytes: Self.jpeg, declaredType: "image/png", signer: alice, nowMillis: 1_000)
        }
        #expect(throws: FileError.typeMismatch(declared: "image/jpeg", actual: "image/gif")) {
            try store.putFile("x.gif", bytes: Self.gif, declaredType: "image/jpeg", signer: alice, nowMillis: 1_000)
        }
        #expect(throws: FileError.tooLarge(size: Self.largePNG.count, limit: 100_000)) {
            try store.putFile("x.png", bytes: Self.largePNG, signer: alice, nowMillis: 1_000, limit: 100_000)
        }
        #expect(throws: FileError.empty) { try store.putFile("x.png", bytes: [], signer: alice, nowMillis: 1_000) }
        #expect(throws: FileError.unknownType) {
            try store.putFile("x.txt", bytes: Array("hello, not an image".utf8), signer: alice, nowMillis: 1_000)
        }
        #expect(throws: FileError.unknownType) {
            try store.putFile("x.png", bytes: Array(Self.smallPNG.prefix(7)), signer: alice, nowMillis: 1_000)
        }
        #expect(try count(store, "chunks") == 0 && count(store, "files") == 0 && store.recordCount() == 0)

        // What the user reads.
        #expect("\(FileError.typeMismatch(declared: "image/png", actual: "image/jpeg"))" == "the file was declared image/png but its bytes are image/jpeg")
        #expect("\(FileError.empty)" == "the file is empty")
        #expect("\(FileError.tooLarge(size: 5, limit: 4))".contains("limit is 4 bytes"))

        // Declared types that agree are accepted, in any case, and image/jpg for JPEG.
        try store.putFile("ok.jpg", bytes: Self.jpeg, declaredType: "image/jpg", signer: alice, nowMillis: 1_000)
        try store.putFile("ok.png", bytes: Self.smallPNG, declaredType: "IMAGE/PNG", signer: alice, nowMillis: 1_000)
        // The default limit is 32 MiB: one byte over is refused.
        #expect(Store.defaultFileLimit == 32 << 20)
        let over = Self.jpeg + [UInt8](repeating: 0, count: Store.defaultFileLimit + 1 - Self.jpeg.count)
        #expect(throws: FileError.tooLarge(size: Store.defaultFileLimit + 1, limit: Store.defaultFileLimit)) {
            try store.putFile("big.jpg", bytes: over, signer: alice, nowMillis: 1_000)
        }
    }

    @Test("delete, and reading what is not there")
    func delete() throws {
        let store = try memoryStore()
        try store.putFile("images/a.gif", bytes: Self.gif, signer: alice, nowMillis: 1_000)
        try store.deleteFile("images/a.gif", signer: alice, nowMillis: 2_000)
        #expect(try store.fileInfo("images/a.gif") == nil)
        #expect(try store.listFiles().isEmpty)
        #expect(throws: FileError.notFound("images/a.gif")) { try store.readFile("images/a.gif") }
        // Stored again after the delete: back.
        try store.putFile("images/a.gif", bytes: Self.gif, signer: alice, nowMillis: 3_000)
        #expect(try store.readFile("images/a.gif") == Self.gif)
        // An older delete arriving late does not remove the newer file.
        let lateDelete = try Record.make(body: .file(FileEntry(path: "images/a.gif", manifest: nil)), clock: 1_500 << 16, signer: bob)
        _ = try store.ingest([lateDelete], nowMillis: 10_000)
        #expect(try store.readFile("images/a.gif") == Self.gif)
    }

    @Test("listFiles by prefix, in path order, including non-ASCII prefixes")
    func listing() throws {
        let store = try memoryStore()
        let uid = alice.publicKey.userID
        for path in ["images/b.png", "images/a.png", "\(uid)/1.png", "ảnh/mèo.png", "imagesX.png"] {
            try store.putFile(path, bytes: Self.smallPNG, signer: alice, nowMillis: 1_000)
        }
        #expect(try store.listFiles(prefix: "images/").map(\.path) == ["images/a.png", "images/b.png"])
        #expect(try store.listFiles(prefix: "images").map(\.path) == ["images/a.png", "images/b.png", "imagesX.png"])
        #expect(try store.listFiles(prefix: "\(uid)/").map(\.path) == ["\(uid)/1.png"])
        #expect(try store.listFiles(prefix: "ảnh/").map(\.path) == ["ảnh/mèo.png"])
        #expect(try store.listFiles(prefix: "ảnh/m").map(\.path) == ["ảnh/mèo.png"])
        #expect(try store.listFiles(prefix: "nothing").isEmpty)
        #expect(try store.listFiles().count == 5)
        let info = try #require(store.listFiles(prefix: "images/a").first)
        #expect(info.manifest.size == UInt64(Self.smallPNG.count) && info.manifest.contentType == "image/png")
    }

    @Test("a path another user owns: refused locally, and an entry for it from a peer has no effect")
    func storageRules() throws {
        let store = try memoryStore()
        let aliceID = alice.publicKey.userID
        let picture = "images/\(aliceID)_profile_picture.png"
        let own = "\(aliceID)/photo.png"
        try store.putFile(picture, bytes: Self.smallPNG, signer: alice, nowMillis: 1_000)
        try store.putFile(own, bytes: Self.smallPNG, signer: alice, nowMillis: 1_000)

        let aliceManifest = try #require(try store.fileInfo(picture)).manifestID

        // Bob cannot store or delete them locally: refused before anything is signed.
        let recordsBefore = try count(store, "records")
        func expectDenied(_ path: String, _ body: () throws -> Void) {
            do {
                try body()
                Issue.record("\(path): expected permission denied")
            } catch StoreError.permissionDenied(let denied) {
                #expect(denied == path)
            } catch {
                Issue.record("\(path): \(error)")
            }
        }
        expectDenied(picture) { try store.putFile(picture, bytes: Self.gif, signer: bob, nowMillis: 5_000) }
        expectDenied(own) { try store.deleteFile(own, signer: bob, nowMillis: 7_000) }
        #expect(try count(store, "records") == recordsBefore)
        // Entries for them arriving from a peer have no effect.
        let forged = try Record.make(body: .file(FileEntry(path: own, manifest: nil)), clock: 6_000 << 16, signer: bob)
        let forgedPicture = try Record.make(body: .file(FileEntry(path: picture, manifest: nil)), clock: 6_001 << 16, signer: bob)
        _ = try store.ingest([forged, forgedPicture], nowMillis: 10_000)
        #expect(try store.readFile(picture) == Self.smallPNG)
        #expect(try store.readFile(own) == Self.smallPNG)
        #expect(try store.fileInfo(picture)?.manifestID == aliceManifest)

        // Bob's own picture path and open paths are his to write.
        let bobPicture = "images/\(bob.publicKey.userID)_profile_picture.gif"
        try store.putFile(bobPicture, bytes: Self.gif, signer: bob, nowMillis: 8_000)
        #expect(try store.readFile(bobPicture) == Self.gif)
        try store.putFile("images/shared.png", bytes: Self.smallPNG, signer: alice, nowMillis: 8_000)
        try store.putFile("images/shared.png", bytes: Self.gif, signer: bob, nowMillis: 9_000)
        #expect(try store.readFile("images/shared.png") == Self.gif)

        #expect(StorageRules.owner(of: picture) == aliceID)
        #expect(StorageRules.owner(of: own) == aliceID)
        #expect(StorageRules.owner(of: "images/cat.png") == nil)
        #expect(StorageRules.owner(of: "images/not_a_user.png") == nil)
        // A user id may contain "_" itself (base64url): the owner is still the whole id.
        let underscored = Base64URL.encode([UInt8](repeating: 0xFF, count: 31) + [0x3F])
        #expect(underscored.contains("_") && underscored.utf8.count == 43)
        #expect(StorageRules.owner(of: "images/\(underscored)_profile_picture.png") == underscored)
        #expect(StorageRules.owner(of: "images/\(underscored)x_profile_picture.png") == nil)
        #expect(StorageRules.owner(of: "images/\(underscored)") == nil)
    }

    @Test("manifest and file records survive export and import; the importer fetches the chunks")
    func exportImport() throws {
        let source = try memoryStore()
        let info = try source.putFile("images/big.png", bytes: Self.largePNG, signer: alice, nowMillis: 1_000)
        try source.putFile("images/gone.gif", bytes: Self.gif, signer: alice, nowMillis: 1_000)
        try source.deleteFile("images/gone.gif", signer: alice, nowMillis: 2_000)
        var encodings = [[UInt8]]()
        try source.forEachRecord { encodings.append($0) }
        let stream = ExportStream.encode(encodings)
        let decoded = try ExportStream.frames(stream).map { try Record.decode(Array($0)) }
        #expect(decoded.map(\.encoded) == encodings)
        #expect(Set(decoded.map(\.kind)) == [.manifest, .file])
        let manifests = decoded.compactMap { record -> Manifest? in
            if case let .manifest(m) = record.body { return m }
            return nil
        }
        #expect(manifests.contains(info.manifest))
        let deletes = decoded.filter { $0.body == .file(FileEntry(path: "images/gone.gif", manifest: nil)) }
        #expect(deletes.count == 1)

        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let target = try Store(path: directory.path + "/store.sqlite")
        let report = try target.ingest(decoded, nowMillis: 10_000)
        #expect(report.added == decoded.count)
        let imported = try #require(try target.fileInfo("images/big.png"))
        #expect(imported.manifestID == info.manifestID && imported.manifest == info.manifest)
        #expect(Set(imported.missing) == Set(info.manifest.chunks))
        #expect(throws: FileError.incomplete(path: "images/big.png", missing: imported.missing.count, of: info.manifest.chunks.count)) {
            try target.readFile("images/big.png")
        }
        #expect(try target.fileInfo("images/gone.gif") == nil)
        // A chunk that is not the bytes of its hash is refused; the right ones complete the file.
        let first = info.manifest.chunks[0]
        var wrong = try #require(try source.chunk(first))
        wrong[0] ^= 1
        #expect(VerifiedChunk(hash: first, bytes: wrong) == nil)
        let writer = try target.chunkWriter()
        for hash in info.manifest.chunks {
            let held = try #require(try source.chunk(hash))
            try writer.put([try #require(VerifiedChunk(hash: hash, bytes: held))])
        }
        #expect(try target.readFile("images/big.png") == Self.largePNG)
    }

    @Test("every single-bit flip of a manifest record is refused")
    func manifestBitFlips() throws {
        let store = try memoryStore()
        let bytes = Self.jpeg + ImageFixtures.noise(2 * Store.chunkSize, seed: 9)
        try store.putFile("f.jpg", bytes: bytes, signer: alice, nowMillis: 1_000)
        var encodings = [[UInt8]]()
        try store.forEachRecord { encodings.append($0) }
        let manifestRecord = try #require(try encodings.first { try Record.decode($0).kind == .manifest })
        #expect(try Record.decode(manifestRecord).kind == .manifest)
        var accepted = [Int]()
        for bit in 0..<(manifestRecord.count * 8) {
            var flipped = manifestRecord
            flipped[bit / 8] ^= UInt8(1 << (bit % 8))
            if (try? Record.decode(flipped)) != nil { accepted.append(bit) }
        }
        #expect(accepted.isEmpty, "bit flips accepted at \(accepted)")
        // And the same for the file entry record.
        let fileRecord = try #require(try encodings.first { try Record.decode($0).kind == .file })
        for bit in stride(from: 0, to: fileRecord.count * 8, by: 1) {
            var flipped = fileRecord
            flipped[bit / 8] ^= UInt8(1 << (bit % 8))
            #expect((try? Record.decode(flipped)) == nil, "file record bit \(bit)")
        }
    }

    @Test("a chunk writer beside the store stores verified chunks; its checkpoints leave the file readable")
    func chunkWriter() throws {
        let source = try memoryStore()
        // About 5 MiB: more WAL than between two checkpoints, so a background checkpoint runs meanwhile.
        let bytes = Self.jpeg + ImageFixtures.noise(80 * Store.chunkSize, seed: 5)
        let info = try source.putFile("images/many.jpg", bytes: bytes, signer: alice, nowMillis: 1_000)
        var encodings = [[UInt8]]()
        try source.forEachRecord { encodings.append($0) }

        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let target = try Store(path: directory.path + "/store.sqlite")
        _ = try target.ingest(encodings.map { try Record.decode($0) }, nowMillis: 10_000)
        let writer = try target.chunkWriter()

        // Checked together, as a node checks a batch (eight at a time where it can): a changed
        // byte and another chunk's hash are refused, the rest pass.
        var batch = try info.manifest.chunks.map { (hash: $0, bytes: try #require(try source.chunk($0))) }
        batch[4].bytes[0] ^= 1
        batch[9].hash = batch[10].hash
        let checked = VerifiedChunk.check(batch)
        #expect(checked.indices.filter { checked[$0] == nil } == [4, 9])
        #expect(VerifiedChunk(hash: batch[4].hash, bytes: batch[4].bytes) == nil)
        var chunks = [VerifiedChunk]()
        for hash in info.manifest.chunks {
            let held = try #require(try source.chunk(hash))
            chunks.append(try #require(VerifiedChunk(hash: hash, bytes: held)))
        }
        #expect(VerifiedChunk.check(chunks.map { (hash: $0.hash, bytes: $0.bytes) }).allSatisfy { $0 != nil })
        for start in stride(from: 0, to: chunks.count, by: 7) { try writer.put(Array(chunks[start..<min(start + 7, chunks.count)])) }
        try writer.put(Array(chunks.prefix(3)))  // already held: skipped
        #expect(try target.fileInfo("images/many.jpg")?.isComplete == true)
        #expect(try target.readFile("images/many.jpg") == bytes)
        #expect(try count(target, "chunks") == chunks.count)
        #expect(try target.integrityCheck() == ["ok"])
    }

    @Test("manifests that break the limits are refused when made")
    func manifestLimits() throws {
        let hash = BLAKE2b.digest256([1])
        let bad: [Manifest] = [
            Manifest(blob: hash, size: 0, contentType: "image/png", chunkSize: 65536, chunks: []),
            Manifest(blob: hash, size: 10, contentType: "image/png", chunkSize: 1024, chunks: [hash]),
            Manifest(blob: hash, size: 70_000, contentType: "image/png", chunkSize: 65536, chunks: [hash]),
            Manifest(blob: hash, size: 10, contentType: "png", chunkSize: 65536, chunks: [hash]),
            Manifest(blob: hash, size: 10, contentType: "image/p ng", chunkSize: 65536, chunks: [hash]),
        ]
        for manifest in bad {
            #expect(throws: RecordError.self) { try Record.make(body: .manifest(manifest), clock: 1 << 16, signer: alice) }
        }
        for path in ["", "a//b", "./a", "a/..", "/a", "a/", "a\u{7}b"] {
            #expect(throws: RecordError.self) { try Record.make(body: .file(FileEntry(path: path, manifest: nil)), clock: 1 << 16, signer: alice) }
        }
    }
}

/// A directory for a store in a file (the chunk writer needs one).
struct TemporaryDirectory {
    let path: String

    init() throws {
        path = FileManager.default.temporaryDirectory.appendingPathComponent("lanchat-store-test-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    func remove() { try? FileManager.default.removeItem(atPath: path) }
}
