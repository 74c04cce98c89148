#if canImport(Glibc)
import Glibc
#endif

/// The bytes of the chunks: one file that only grows, each chunk written once at the end
/// (`store.chunks.pack` beside `store.chunks.sqlite`, whose `packed` table says where each one
/// lies; see `ChunkStore`).
///
/// Why not SQLite blobs: storing a fetched 64 KiB chunk as a blob copied it into a record, then
/// into pages, then into the WAL, and later the checkpoint wrote it a second time; about a third
/// of the CPU time of a fetch went there. Appended here, a chunk is written once, straight from
/// the array it arrived in.
///
/// Reads go through a memory map of the file, so a chunk served to a peer is copied once, into
/// the session's output. The map covers more than the file (Linux allows mapping past the end;
/// only touching a page past it faults), and is made again, larger, when an entry lies beyond
/// it; every read first checks that its entry lies within the file, so a pack cut short by
/// something else is reported, never touched past its end.
///
/// One instance per connection that uses it, confined to that connection's thread. Writers in
/// several processes never collide: an append happens under the chunk index's write lock and
/// at the end the index records (`ChunkStore.append`).
final class ChunkPack {
    let path: String
    /// The system calls that write, sync and read the file (`DiskAccess.pack`).
    private let io: any PackIO
    private let descriptor: Int32
    private var map: UnsafeMutableRawPointer?
    private var mapLength = 0
    /// The file's size when last asked; reads within it need not ask again.
    private var knownSize = 0

    /// Maps grow in steps of this size, so a growing pack is mapped again rarely.
    static let mapStep = 1 << 30

    /// Opens (creating if needed) the pack at `path`; an in-memory store (":memory:") gets an
    /// unnamed temporary file that lives as long as this instance.
    init(path: String, io: any PackIO = SystemPackIO()) throws(StoreError) {
        self.path = path
        self.io = io
        let fd: Int32
        if path == ":memory:" {
            var template = Array(((getenv("TMPDIR").map { String(cString: $0) } ?? "/tmp") + "/lanchat-chunks-XXXXXX").utf8CString)
            fd = template.withUnsafeMutableBufferPointer { name in
                let fd = mkstemp(name.baseAddress!)
                if fd >= 0 {
                    unlink(name.baseAddress!)
                    _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
                }
                return fd
            }
        } else {
            fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        }
        guard fd >= 0 else { throw .io(path: path, reason: String(cString: strerror(errno))) }
        descriptor = fd
    }

    deinit {
        if let map { munmap(map, mapLength) }
        close(descriptor)
    }

    /// Writes `pieces` one after another from `offset` and syncs them to the disk, so that the
    /// index entries committed afterwards never name bytes a power loss could take back.
    func write(_ pieces: [ArraySlice<UInt8>], at offset: Int) throws {
        var position = offset
        for piece in pieces {
            try piece.withUnsafeBytes { try writeFully($0, at: position) }
            position += piece.count
        }
        let synced = io.fdatasync(path: path, fd: descriptor)
        guard synced == 0 else { throw StoreError.from(errno: -synced, path: path, doing: "sync") }
    }

    /// Calls `body` with the `count` bytes at `offset`, valid only during the call.
    func withBytes<T>(at offset: Int, count: Int, _ body: (UnsafeRawBufferPointer) throws -> T) throws -> T {
        let end = offset + count
        if end > knownSize {
            var status = stat()
            guard fstat(descriptor, &status) == 0 else { throw StoreError.io(path: path, reason: String(cString: strerror(errno))) }
            knownSize = Int(status.st_size)
        }
        // Checked on every read, not only when the size is asked again: an index entry with a
        // negative offset or length lies within the known size too.
        guard offset >= 0, count >= 0, end <= knownSize else {
            throw StoreError.corrupt(path: path, reason: "a chunk lies at \(offset)..<\(end) but the file has \(knownSize) bytes")
        }
        guard count > 0 else { return try body(UnsafeRawBufferPointer(start: nil, count: 0)) }
        let readable = io.checkRead(path: path, fd: descriptor, offset: offset, count: count)
        guard readable == 0 else { throw StoreError.from(errno: -readable, path: path, doing: "read") }
        if end > mapLength { try remap(covering: end) }
        return try body(UnsafeRawBufferPointer(start: map! + offset, count: count))
    }

    private func remap(covering end: Int) throws(StoreError) {
        if let map { munmap(map, mapLength) }
        map = nil
        let length = (end / Self.mapStep + 1) * Self.mapStep
        let mapped = mmap(nil, length, PROT_READ, MAP_SHARED, descriptor, 0)
        guard let mapped, mapped != MAP_FAILED else { mapLength = 0; throw .io(path: path, reason: "map: \(String(cString: strerror(errno)))") }
        map = mapped
        mapLength = length
    }

    private func writeFully(_ bytes: UnsafeRawBufferPointer, at offset: Int) throws(StoreError) {
        var written = 0
        while written < bytes.count {
            let result = io.pwrite(path: path, fd: descriptor, UnsafeRawBufferPointer(rebasing: bytes[written...]), at: offset + written)
            if result < 0 {
                if result == -Int(EINTR) { continue }
                throw .from(errno: Int32(-result), path: path, doing: "write")
            }
            written += result
        }
    }
}
