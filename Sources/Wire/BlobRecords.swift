import Crypto
import Tree

/// A blob's manifest (record kind 2): everything needed to fetch the blob's chunks from any peer
/// and check each one, signed by whoever stored it.
public struct Manifest: Hashable, Sendable {
    /// BLAKE2b-256 of the whole content.
    public let blob: Digest32
    public let size: UInt64
    /// The media type, e.g. "image/png".
    public let contentType: String
    public let chunkSize: UInt64
    /// BLAKE2b-256 of every chunk, in order.
    public let chunks: [Digest32]

    public init(blob: Digest32, size: UInt64, contentType: String, chunkSize: UInt64, chunks: [Digest32]) {
        self.blob = blob
        self.size = size
        self.contentType = contentType
        self.chunkSize = chunkSize
        self.chunks = chunks
    }

    /// Protocol limits (Protocol.md §3.6).
    public static let maxSize: UInt64 = 1 << 30
    public static let chunkSizes: ClosedRange<UInt64> = 4096...(1 << 20)
    public static let maxContentTypeBytes = 127

    /// Byte range of chunk `index` in the content.
    public func range(ofChunk index: Int) -> Range<Int> {
        let start = Int(chunkSize) * index
        return start..<min(start + Int(chunkSize), Int(size))
    }

    func validate() throws(RecordError) {
        guard size >= 1, size <= Manifest.maxSize else { throw .invalidBody("blob size \(size) outside 1...\(Manifest.maxSize)") }
        guard Manifest.chunkSizes.contains(chunkSize) else { throw .invalidBody("chunk size \(chunkSize) outside \(Manifest.chunkSizes)") }
        guard UInt64(chunks.count) == (size + chunkSize - 1) / chunkSize else {
            throw .invalidBody("\(chunks.count) chunk hashes for \(size) bytes in chunks of \(chunkSize)")
        }
        let typeBytes = Array(contentType.utf8)
        guard !typeBytes.isEmpty, typeBytes.count <= Manifest.maxContentTypeBytes,
              typeBytes.allSatisfy({ $0 > 0x20 && $0 < 0x7F }), typeBytes.contains(UInt8(ascii: "/")) else {
            throw .invalidBody("content type must be a printable ASCII media type")
        }
    }
}

/// A file entry (record kind 3): a storage path names a manifest, or nothing (deleted).
public struct FileEntry: Hashable, Sendable {
    /// Like `images/cat.png` or `<uid>/1764460800000.jpg`.
    public let path: String
    /// The manifest record's id; `nil` deletes the file.
    public let manifest: Digest32?

    /// `path` is taken in NFC (`canonicalPath`), whatever its spelling.
    public init(path: String, manifest: Digest32?) {
        self.path = FileEntry.canonicalPath(path)
        self.manifest = manifest
    }

    public static let maxPathBytes = 1024

    /// The one spelling of a storage path, Unicode NFC, as for tree keys (Protocol.md §3.5,
    /// §5.1): canonically equivalent paths name one file. Every storage path a store is given
    /// is taken in this form before it is checked, compared or stored.
    public static func canonicalPath(_ path: String) -> String {
        CanonicalText.nfc(path)
    }

    /// A storage path: 1-1024 bytes of UTF-8, segments separated by "/", none empty, no control
    /// characters, no "." or ".." segments. Give it the NFC form (`canonicalPath`), which is
    /// what the limits apply to.
    public static func validate(path: String) throws(RecordError) {
        let bytes = Array(path.utf8)
        guard !bytes.isEmpty, bytes.count <= maxPathBytes else { throw .invalidPath("storage path must be 1...\(maxPathBytes) bytes") }
        guard !bytes.contains(where: { $0 < 0x20 || $0 == 0x7F }) else { throw .invalidPath("storage path has a control character") }
        // Split the bytes, not Characters: a "/" followed by a combining mark is one Character,
        // which would hide the slash and let a "." or ".." segment through.
        for segment in bytes.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false) {
            guard !segment.isEmpty, !segment.elementsEqual([0x2E]), !segment.elementsEqual([0x2E, 0x2E]) else {
                throw .invalidPath("storage path \"\(path)\" has an empty, \".\" or \"..\" segment")
            }
        }
    }

    func validate() throws(RecordError) { try FileEntry.validate(path: path) }
}

extension RecordCodec {
    static func encode(_ manifest: Manifest) -> CBOR {
        .array([.bytes(manifest.blob.bytes), .unsigned(manifest.size), .text(manifest.contentType),
                .unsigned(manifest.chunkSize), .array(manifest.chunks.map { .bytes($0.bytes) })])
    }

    static func decodeManifest(_ item: CBOR) throws(RecordError) -> Manifest {
        guard case let .array(fields) = item, fields.count == 5,
              case let .bytes(blob) = fields[0], let blobDigest = try? Digest32(bytes: blob),
              case let .unsigned(size) = fields[1], case let .text(type) = fields[2],
              case let .unsigned(chunkSize) = fields[3], case let .array(chunkItems) = fields[4]
        else { throw .invalidBody("a manifest is [blob, size, type, chunk size, [chunk hashes]]") }
        var chunks = [Digest32]()
        chunks.reserveCapacity(chunkItems.count)
        for item in chunkItems {
            guard case let .bytes(hash) = item, let digest = try? Digest32(bytes: hash) else {
                throw .invalidBody("a chunk hash is not 32 bytes")
            }
            chunks.append(digest)
        }
        return Manifest(blob: blobDigest, size: size, contentType: type, chunkSize: chunkSize, chunks: chunks)
    }

    static func encode(_ file: FileEntry) -> CBOR {
        .array([.text(file.path), file.manifest.map { .bytes($0.bytes) } ?? .null])
    }

    static func decodeFile(_ item: CBOR) throws(RecordError) -> FileEntry {
        guard case let .array(fields) = item, fields.count == 2, case let .text(path) = fields[0] else {
            throw .invalidBody("a file entry is [path, manifest id or null]")
        }
        switch fields[1] {
        case .null: return FileEntry(path: path, manifest: nil)
        case let .bytes(id):
            guard let digest = try? Digest32(bytes: id) else { throw .invalidBody("a manifest id is 32 bytes") }
            return FileEntry(path: path, manifest: digest)
        default: throw .invalidBody("a file entry names a manifest id or null")
        }
    }
}
