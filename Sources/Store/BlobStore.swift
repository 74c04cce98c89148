import Private
import Crypto
import SQLite
import Tree
import Wire

/// What the store knows of a stored file.
public struct FileInfo: Sendable, Equatable {
    public let path: String
    public let manifestID: Digest32
    public let manifest: Manifest
    /// Chunks of the manifest not held yet (empty: the file can be read).
    public let missing: [Digest32]
    public var isComplete: Bool { missing.isEmpty }
}

/// The blob store's records (Protocol.md §3.6, §8.5): manifests, and the file entries that name
/// them. The chunks they list are in the chunk pack and its index (`ChunkStore`).
struct BlobStore {
    let db: Connection

    func addManifest(_ manifest: Manifest, id: Digest32) throws {
        try db.run("INSERT OR IGNORE INTO manifests(id, blob, size, type, chunk_size, hashes) VALUES (?, ?, ?, ?, ?, ?)", [
            .blob(id.bytes), .blob(manifest.blob.bytes), .integer(Int64(manifest.size)), .text(manifest.contentType),
            .integer(Int64(manifest.chunkSize)), .blob(manifest.chunks.flatMap(\.bytes)),
        ])
        if manifest.contentType == SealedFile.contentType {
            try db.run("INSERT OR IGNORE INTO file_refs(path) SELECT path FROM files WHERE manifest = ?", [.blob(id.bytes)])
        }
    }

    /// A file entry takes effect under the storage rules; the newest one per path wins.
    func applyFile(_ entry: FileEntry, author: PublicKey, order: [UInt8]) throws {
        guard StorageRules.mayWrite(entry.path, author: author.userID) else { return }
        try db.run("""
            INSERT INTO files(path, manifest, ord, author) VALUES (?, ?, ?, ?)
            ON CONFLICT(path) DO UPDATE SET manifest = excluded.manifest, ord = excluded.ord, author = excluded.author
            WHERE excluded.ord > files.ord
            """, [.text(entry.path), entry.manifest.map { .blob($0.bytes) } ?? .null, .blob(order), .blob(author.bytes)])
        // A sealed file (a photo of a private conversation) counts as referenced on every node:
        // non-members cannot read the message that names it, yet they must hold its chunks to
        // relay them.
        if let manifest = entry.manifest {
            try db.run("INSERT OR IGNORE INTO file_refs(path) SELECT ? WHERE EXISTS (SELECT 1 FROM manifests WHERE id = ? AND type = ?)",
                       [.text(entry.path), .blob(manifest.bytes), .text(SealedFile.contentType)])
        }
    }

    func manifest(_ id: Digest32) throws -> Manifest? {
        try db.first("SELECT blob, size, type, chunk_size, hashes FROM manifests WHERE id = ?", [.blob(id.bytes)]) { row in
            let hashes = row.blob(4)
            let chunks = stride(from: 0, to: hashes.count, by: 32).map { try! Digest32(bytes: hashes[$0..<$0 + 32]) }
            return Manifest(blob: try Digest32(bytes: row.blob(0)), size: UInt64(row.int64(1)), contentType: row.text(2),
                            chunkSize: UInt64(row.int64(3)), chunks: chunks)
        }
    }
}

/// Who may write a storage path: a path whose first segment is a user id, or an image named
/// `images/<user id>_...` (a profile picture), belongs to that user; any other path to everyone,
/// last writer wins (Protocol.md §5.5).
public enum StorageRules {
    /// The user a storage path belongs to, if any. The path is taken in NFC, the spelling files
    /// are stored under, and split at its "/" bytes as `FileEntry.validate` splits it (a "/"
    /// followed by a combining mark is one `Character`, which would hide the separator).
    public static func owner(of path: String) -> String? {
        let bytes = Array(FileEntry.canonicalPath(path).utf8)
        let segments = bytes.split(separator: UInt8(ascii: "/"), maxSplits: 2, omittingEmptySubsequences: false)
        if let first = segments.first, let id = userID(first) { return id }
        if segments.count >= 2, segments[0].elementsEqual("images".utf8) {
            // A user id is 43 characters and may itself contain "_" (base64url): the id is the
            // first 43 characters of the name, and the "_" is the one right after them.
            let name = segments[1]
            if name.count > userIDLength, name[name.startIndex + userIDLength] == UInt8(ascii: "_") {
                if let id = userID(name.prefix(userIDLength)) { return id }
            }
        }
        return nil
    }

    /// Characters in a user id (32 bytes in unpadded base64url).
    static let userIDLength = 43

    public static func mayWrite(_ path: String, author: String) -> Bool {
        owner(of: path).map { $0 == author } ?? true
    }

    /// The user id these bytes spell, if they spell one (ASCII, so their own NFC).
    static func userID(_ bytes: ArraySlice<UInt8>) -> String? {
        guard bytes.count == userIDLength, bytes.allSatisfy({ $0 < 0x80 }) else { return nil }
        let text = String(decoding: bytes, as: UTF8.self)
        return Base64URL.decode(text)?.count == 32 ? text : nil
    }
}
