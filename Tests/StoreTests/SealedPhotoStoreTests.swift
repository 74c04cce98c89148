import Crypto
import Foundation
import Private
import Testing
import Tree
import Wire
@testable import Store
import TestSupport

/// Photos of private conversations in real stores (Protocol.md §11.7): a member's store opens
/// the photo with the key its sealed message carries; a non-member's store holds the sealed
/// chunks (to relay them) and nothing it could open; a changed file is an error, not an image.
@Suite("Sealed photos in the store")
struct SealedPhotoStoreTests {
    let alice = testAuthors[0], bob = testAuthors[1], carol = testAuthors[2]
    let now: UInt64 = 1_700_000_000_000
    static let photo = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + ImageFixtures.noise(150_000, seed: 41)

    func store(for user: PrivateKey, in directory: URL) throws -> Store {
        let store = try Store(path: directory.appendingPathComponent("\(user.publicKey.userID.prefix(8)).sqlite").path)
        try store.usePrivateKeys(of: user)
        return store
    }

    /// Every record and chunk of `source` into `target`, as sessions would bring them.
    func copyAll(from source: Store, to target: Store) throws {
        let records = try source.records(after: 0, limit: 100_000).map { try Record.decode($0.bytes) }
        _ = try target.ingest(records, nowMillis: now + 1_000)
        let writer = try target.chunkWriter()
        for file in try source.listFiles() {
            for hash in file.manifest.chunks {
                let held = try #require(try source.chunk(hash))
                try writer.put([try #require(VerifiedChunk(hash: hash, bytes: held))])
            }
        }
    }

    /// A photo message in `cid` by alice naming the sealed file at `path` with `key`.
    func sendPhoto(_ a: Store, _ cid: String, path: String, key: [UInt8], at time: UInt64) throws -> String {
        try a.push(try Path("/conversations/\(cid)/messages"), value: [
            "senderId": .string(alice.publicKey.userID), "photoURL": .string("gs://lanchat/\(path)"),
            "photoKey": .string(SealedFile.encodeKey(key)),
        ], signer: alice, nowMillis: time).key
    }

    @Test("a member opens the photo; a non-member holds its sealed chunks, no key, and no plaintext in any file")
    func membersOnly() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("lanchat-sealed-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let carolDirectory = directory.appendingPathComponent("carol")
        try FileManager.default.createDirectory(at: carolDirectory, withIntermediateDirectories: true)
        let a = try store(for: alice, in: directory), b = try store(for: bob, in: directory), c = try store(for: carol, in: carolDirectory)
        let cid = try a.createGroup(title: "Trip", members: [bob.publicKey], sharesHistory: false, signer: alice, nowMillis: now)
        let path = "images/\(alice.publicKey.userID)_p1"
        let (file, key) = try a.putSealedFile(path, bytes: Self.photo, signer: alice, nowMillis: now + 1)
        #expect(file.manifest.contentType == SealedFile.contentType)
        #expect(file.manifest.size == UInt64(SealedFile.sealedSize(Self.photo.count)))
        _ = try sendPhoto(a, cid, path: path, key: key, at: now + 2)
        #expect(try a.openFile(path).bytes == Self.photo)
        #expect(try a.openFile(path).type == "image/png")

        try copyAll(from: a, to: b)
        #expect(try b.openFile(path).bytes == Self.photo)
        try copyAll(from: a, to: c)
        #expect(try c.fileInfo(path)?.isComplete == true, "a non-member holds the chunks, to relay them")
        #expect(try c.referencedIncompleteFiles(paths: [path]).isEmpty)
        #expect(throws: FileError.noKey(path)) { try c.openFile(path) }
        for name in try FileManager.default.contentsOfDirectory(atPath: carolDirectory.path) {
            let bytes = [UInt8](try Data(contentsOf: carolDirectory.appendingPathComponent(name)))
            #expect(!bytes.windowsContain(Array(Self.photo[1000..<1048])), "\(name) holds the photo")
        }
    }

    @Test("a non-member's store fetches a sealed file at once: it counts as referenced though no message it reads names it")
    func relayFetches() throws {
        let a = try Store(path: ":memory:"), c = try Store(path: ":memory:")
        try a.usePrivateKeys(of: alice)
        try c.usePrivateKeys(of: carol)
        let path = "images/\(alice.publicKey.userID)_p2"
        _ = try a.putSealedFile(path, bytes: Self.photo, signer: alice, nowMillis: now)
        _ = try a.putFile("open/plain.png", bytes: Self.photo, signer: alice, nowMillis: now + 1)
        let records = try a.records(after: 0, limit: 100).map { try Record.decode($0.bytes) }
        _ = try c.ingest(records, nowMillis: now + 10)
        #expect(try c.referencedIncompleteFiles().map(\.path) == [path], "the sealed file is wanted, an unreferenced plain one is not")
    }

    @Test("a photo whose file was swapped for another sealed file, or whose key is wrong, is an error, not another image")
    func swappedOrWrong() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("lanchat-sealed-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let a = try store(for: alice, in: directory), b = try store(for: bob, in: directory)
        let cid = try a.createGroup(title: "Trip", members: [bob.publicKey], sharesHistory: false, signer: alice, nowMillis: now)
        let path = "images/\(alice.publicKey.userID)_p3"
        let (_, key) = try a.putSealedFile(path, bytes: Self.photo, signer: alice, nowMillis: now + 1)
        _ = try sendPhoto(a, cid, path: path, key: key, at: now + 2)
        // Later the path names another sealed file (under a key no message carries).
        let other = [0xFF, 0xD8, 0xFF] + ImageFixtures.noise(70_000, seed: 42)
        _ = try a.putSealedFile(path, bytes: other, signer: alice, nowMillis: now + 3)
        try copyAll(from: a, to: b)
        #expect(throws: FileError.undecryptable(path)) { try b.openFile(path) }

        // A member's message that names a key for a photo it does not own gives that key nothing.
        let bobsPath = "images/\(alice.publicKey.userID)_p4"
        let (_, realKey) = try a.putSealedFile(bobsPath, bytes: Self.photo, signer: alice, nowMillis: now + 4)
        let bogus = SealedFile.makeKey()
        _ = try b.push(try Path("/conversations/\(cid)/messages"), value: [
            "senderId": .string(bob.publicKey.userID), "photoURL": .string("gs://lanchat/\(bobsPath)"),
            "photoKey": .string(SealedFile.encodeKey(bogus)),
        ], signer: bob, nowMillis: now + 5)
        try copyAll(from: a, to: b)
        #expect(throws: FileError.noKey(bobsPath)) { try b.openFile(bobsPath) }
        _ = try sendPhoto(a, cid, path: bobsPath, key: realKey, at: now + 6)
        try copyAll(from: a, to: b)
        #expect(try b.openFile(bobsPath).bytes == Self.photo)
    }
}
