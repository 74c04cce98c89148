import Crypto
import SQLite
import Tree
import Wire

/// Why a file could not be stored; each message is what the user reads.
public enum FileError: Error, Equatable, CustomStringConvertible {
    case empty
    case tooLarge(size: Int, limit: Int)
    case unknownType
    case typeMismatch(declared: String, actual: String)
    case notFound(String)
    case incomplete(path: String, missing: Int, of: Int)
    /// A sealed file (a photo of a private conversation) whose key no message here carries.
    case noKey(String)
    /// A sealed file that opens with none of the keys its messages carry: another file's
    /// bytes, or changed ones.
    case undecryptable(String)

    public var description: String {
        switch self {
        case .empty: return "the file is empty"
        case let .tooLarge(size, limit): return "the file is \(size) bytes; the limit is \(limit) bytes"
        case .unknownType: return "the bytes are not a JPEG, PNG, GIF or WebP image"
        case let .typeMismatch(declared, actual): return "the file was declared \(declared) but its bytes are \(actual)"
        case let .notFound(path): return "no file is stored at \(path)"
        case let .incomplete(path, missing, total): return "\(path): \(missing) of \(total) chunks are not here yet"
        case let .noKey(path): return "\(path) is sealed for the members of a private conversation; no message here carries its key"
        case let .undecryptable(path): return "\(path) does not open with the key its message carries: its bytes are not the photo that was sent"
        }
    }
}

/// Files: images cut into content-addressed chunks, a signed manifest, and a file entry that
/// names it at a storage path.
extension Store {
    /// The default limit on a stored file.
    public static let defaultFileLimit = 32 << 20
    /// Chunk size of new blobs: large enough that a 20 MiB image is 320 chunks, small enough to
    /// spread a fetch over several peers and to stay far below the session frame limit.
    public static let chunkSize = 64 << 10

    /// Stores `bytes` at `path`: sniffs the type (it must agree with `declaredType` if given),
    /// cuts and stores the chunks (each once), signs a manifest and a file entry. Durable on return.
    /// A path that belongs to another user (`StorageRules`) is refused with `permissionDenied`
    /// before anything is written: the entry would be signed and spread, and have no effect.
    /// Like every storage path given to the store, `path` is taken in NFC (`FileEntry.canonicalPath`).
    @discardableResult
    public func putFile(_ path: String, bytes: [UInt8], declaredType: String? = nil, signer: PrivateKey,
                        nowMillis: UInt64, limit: Int = Store.defaultFileLimit) throws -> FileInfo {
        let path = FileEntry.canonicalPath(path)
        try FileEntry.validate(path: path)
        try Store.checkMayWrite(path, signer: signer)
        let type = try Store.checkFile(bytes, declaredType: declaredType, limit: limit)
        return try putBlob(path, bytes: bytes, type: type, signer: signer, nowMillis: nowMillis)
    }

    /// Cuts `bytes` into chunks (each stored once), signs a manifest of `type` and a file entry
    /// naming it at `path` (checked by the caller). Durable on return.
    func putBlob(_ path: String, bytes: [UInt8], type: String, signer: PrivateKey, nowMillis: UInt64) throws -> FileInfo {
        let chunkSize = Store.chunkSize
        let chunks = stride(from: 0, to: bytes.count, by: chunkSize).map { bytes[$0..<min($0 + chunkSize, bytes.count)] }
        let hashes = BLAKE2b.digests256(chunks)
        let manifest = Manifest(blob: BLAKE2b.digest256(bytes), size: UInt64(bytes.count), contentType: type,
                                chunkSize: UInt64(chunkSize), chunks: hashes)
        // The chunks are durable in their own file before any record names them.
        do {
            try chunkDB.transaction(.immediate) {
                _ = try chunkStore.append(Array(zip(hashes, chunks)))
            }
        } catch let error as SQLiteError {
            throw StoreError.from(error, path: chunkPath)
        }
        return try transaction {
            let manifestRecord = try writeRecord(.manifest(manifest), signer: signer, nowMillis: nowMillis)
            _ = try writeRecord(.file(FileEntry(path: path, manifest: manifestRecord.id)), signer: signer, nowMillis: nowMillis)
            return FileInfo(path: path, manifestID: manifestRecord.id, manifest: manifest, missing: [])
        }
    }

    /// Throws `permissionDenied` unless `signer` may write the storage path.
    static func checkMayWrite(_ path: String, signer: PrivateKey) throws(StoreError) {
        guard StorageRules.mayWrite(path, author: signer.publicKey.userID) else { throw .permissionDenied(path: path) }
    }

    /// The content type of `bytes` if `putFile` would accept them, else the reason it would not:
    /// so a command can refuse a file before it writes anything else (a photo message).
    public static func checkFile(_ bytes: [UInt8], declaredType: String? = nil, limit: Int = Store.defaultFileLimit) throws(FileError) -> String {
        guard !bytes.isEmpty else { throw .empty }
        guard bytes.count <= limit else { throw .tooLarge(size: bytes.count, limit: limit) }
        guard let type = ImageType.sniff(bytes) else { throw .unknownType }
        if let declaredType, declaredType.lowercased() != type, !(declaredType.lowercased() == "image/jpg" && type == "image/jpeg") {
            throw .typeMismatch(declared: declaredType, actual: type)
        }
        return type
    }

    /// Deletes the file at `path` (a file entry naming nothing); `permissionDenied` for a path
    /// that belongs to another user.
    public func deleteFile(_ path: String, signer: PrivateKey, nowMillis: UInt64) throws {
        let path = FileEntry.canonicalPath(path)
        try FileEntry.validate(path: path)
        try Store.checkMayWrite(path, signer: signer)
        _ = try transaction { try writeRecord(.file(FileEntry(path: path, manifest: nil)), signer: signer, nowMillis: nowMillis) }
    }

    /// The file at `path` (in any spelling), with the chunks still missing; nil if there is none.
    public func fileInfo(_ path: String) throws -> FileInfo? {
        let path = FileEntry.canonicalPath(path)
        guard let id = try db.first("SELECT manifest FROM files WHERE path = ? AND manifest IS NOT NULL", [.text(path)], {
            try Digest32(bytes: $0.blob(0))
        }), let manifest = try blobs.manifest(id) else { return nil }
        return FileInfo(path: path, manifestID: id, manifest: manifest, missing: try missingChunks(manifest))
    }

    func missingChunks(_ manifest: Manifest) throws -> [Digest32] {
        var missing = [Digest32]()
        var seen = Set<Digest32>()
        for hash in manifest.chunks where seen.insert(hash).inserted {
            if !(try chunkStore.has(hash)) { missing.append(hash) }
        }
        return missing
    }

    /// The bytes of the file at `path`, checked against its manifest's blob hash.
    public func readFile(_ path: String) throws -> [UInt8] {
        let path = FileEntry.canonicalPath(path)
        guard let info = try fileInfo(path) else { throw FileError.notFound(path) }
        guard info.isComplete else {
            throw FileError.incomplete(path: path, missing: info.missing.count, of: info.manifest.chunks.count)
        }
        var bytes = [UInt8]()
        bytes.reserveCapacity(Int(info.manifest.size))
        for hash in info.manifest.chunks {
            guard let chunk = try chunkStore.bytes(hash) else { throw FileError.incomplete(path: path, missing: 1, of: info.manifest.chunks.count) }
            bytes += chunk
        }
        guard BLAKE2b.digest256(bytes) == info.manifest.blob else { throw FileError.incomplete(path: path, missing: 0, of: info.manifest.chunks.count) }
        return bytes
    }

    /// Files whose path starts with `prefix`, in path order; both in NFC.
    public func listFiles(prefix: String = "") throws -> [FileInfo] {
        let prefix = FileEntry.canonicalPath(prefix)
        // Compared as bytes: substr on TEXT counts characters, not the UTF-8 bytes of the prefix.
        let paths = try db.all("SELECT path FROM files WHERE manifest IS NOT NULL AND substr(CAST(path AS BLOB), 1, ?) = ? ORDER BY path",
                               [.integer(Int64(prefix.utf8.count)), .blob(Array(prefix.utf8))]) { $0.text(0) }
        return try paths.compactMap { try fileInfo($0) }
    }

    /// A held chunk's bytes (to serve a peer).
    public func chunk(_ hash: Digest32) throws -> [UInt8]? { try chunkStore.bytes(hash) }

    /// Calls `body` with a held chunk's bytes, valid only during the call, and returns whether
    /// the chunk is held: `chunk` without the copy into an array (to serve a peer).
    public func withChunk(_ hash: Digest32, _ body: (UnsafeRawBufferPointer) -> Void) throws -> Bool {
        try chunkStore.withBytes(hash, body)
    }

    /// Files that messages or profiles refer to and whose chunks are not all here: fetched eagerly.
    /// (A reference is text in a value, in whatever spelling; the file is found by its NFC path.)
    public func referencedIncompleteFiles() throws -> [FileInfo] {
        try referencedIncompleteFiles(after: 0).files
    }

    /// `referencedIncompleteFiles` among the references noted after row `after` of `file_refs`
    /// (rows only grow), and the last row read: a running node reads each reference once as it
    /// appears instead of every reference at every turn, which at a year of chat (tens of
    /// thousands of photos whose bytes no peer may have) cost a fifth of its time, idle or not.
    /// Files that become complete or fetchable later are found by `referencedIncompleteFiles(paths:)`.
    public func referencedIncompleteFiles(after row: Int64) throws -> (files: [FileInfo], last: Int64) {
        try readTransaction {
            var last = row
            var paths = [String]()
            try db.query("SELECT rowid, path FROM file_refs WHERE rowid > ? ORDER BY rowid", [.integer(row)]) { row in
                last = row.int64(0)
                paths.append(FileEntry.canonicalPath(row.text(1)))
            }
            var seen = Set<[UInt8]>()
            let files = try paths.filter { seen.insert(Array($0.utf8)).inserted }.compactMap { try fileInfo($0) }.filter { !$0.isComplete }
            return (files, last)
        }
    }

    /// The incomplete files among `paths` (NFC storage paths) that a message or profile refers
    /// to: after a file entry or manifest arrives, the files it may have made fetchable.
    public func referencedIncompleteFiles(paths: some Sequence<String>) throws -> [FileInfo] {
        try readTransaction {
            try paths.filter { path in
                try db.first("SELECT 1 FROM file_refs WHERE path = ?", [.text(path)]) { _ in true } ?? false
            }.compactMap { try fileInfo($0) }.filter { !$0.isComplete }
        }
    }

    /// The storage paths of the files that records among `records` name or describe: a file
    /// entry's path, and the paths of the files whose manifest is one of them.
    public func filePaths(touchedBy records: [Record]) throws -> Set<String> {
        var paths = Set<String>()
        for record in records {
            switch record.body {
            case let .file(entry):
                paths.insert(FileEntry.canonicalPath(entry.path))
            case .manifest:
                try db.query("SELECT path FROM files WHERE manifest = ?", [.blob(record.id.bytes)]) { paths.insert($0.text(0)) }
            case .write, .largeWrite, .groupKey, .sealedWrite, .leave:
                continue
            }
        }
        return paths
    }

    /// The storage path named by `gs://BUCKET/PATH`, or the text itself if it is a plain path.
    public static func storagePath(fromURL url: String) -> String? {
        guard url.hasPrefix("gs://") else { return nil }
        let rest = url.dropFirst(5)
        guard let slash = rest.firstIndex(of: "/") else { return nil }
        let path = String(rest[rest.index(after: slash)...])
        return path.isEmpty ? nil : path
    }
}

/// Chunk bytes known to be exactly the bytes of their hash: the only way into `ChunkWriter`, so
/// the store never holds a chunk that does not match its address. Checking (hashing 64 KiB) is
/// the costly part, so it is done once, where the chunk arrives, and may run on any thread.
public struct VerifiedChunk: Sendable {
    public let hash: Digest32
    public let bytes: [UInt8]

    /// Nil when `bytes` are not the bytes of `hash`.
    public init?(hash: Digest32, bytes: [UInt8]) {
        guard BLAKE2b.digest256(bytes) == hash else { return nil }
        self.hash = hash
        self.bytes = bytes
    }

    private init(checked hash: Digest32, bytes: [UInt8]) {
        self.hash = hash
        self.bytes = bytes
    }

    /// Each chunk checked against its hash (nil where it does not match), hashed together:
    /// chunks of the same length go several at a time (`BLAKE2b.digests256`).
    public static func check(_ chunks: some Collection<(hash: Digest32, bytes: [UInt8])>) -> [VerifiedChunk?] {
        zip(chunks, BLAKE2b.digests256(chunks.map(\.bytes))).map { chunk, digest in
            digest == chunk.hash ? VerifiedChunk(checked: chunk.hash, bytes: chunk.bytes) : nil
        }
    }
}

/// Stores fetched chunks through a connection and pack descriptor of their own, so a node's
/// queue does not spend its time storing while the next chunks are waiting to be decrypted: the
/// node hashes and stores each batch of arrived chunks beside its queue. Use from one thread or
/// serial queue at a time.
///
/// The pack's bytes are synced before the index names them (`ChunkStore.append`), but the
/// index's commits are not (`synchronous=NORMAL`): the WAL keeps them through a crash of the
/// process, and a power loss can only lose the last entries, whose chunks are then missing and
/// fetched again; the next durable commit of the index syncs them. Only `VerifiedChunk`s get in,
/// so whatever is stored matches its hash. The index's checkpoints run on a connection and
/// thread of their own (`BackgroundCheckpointer`), not inside its commits.
public final class ChunkWriter: @unchecked Sendable {
    let chunks: ChunkStore
    private let checkpointer: BackgroundCheckpointer

    /// `path` is the chunk index (`Store.chunkPath`).
    init(path: String, disk: DiskAccess = .system) throws {
        let db = try Connection(path: path, vfs: disk.vfs)
        try db.execute("PRAGMA synchronous = NORMAL")
        chunks = ChunkStore(db: db, pack: try ChunkPack(path: ChunkStore.packPath(forIndexAt: path), io: disk.pack))
        checkpointer = try BackgroundCheckpointer(for: db, path: path)
    }

    /// Stores the chunks in one transaction (those already held are skipped).
    public func put(_ chunks: [VerifiedChunk]) throws {
        guard !chunks.isEmpty else { return }
        do {
            try self.chunks.db.transaction(.immediate) {
                _ = try self.chunks.append(chunks.map { ($0.hash, $0.bytes[...]) })
            }
        } catch let error as SQLiteError {
            throw StoreError.from(error, path: self.chunks.db.path)
        }
    }
}
