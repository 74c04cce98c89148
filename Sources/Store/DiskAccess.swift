#if canImport(Glibc)
import Glibc
#endif

/// How a store reaches the disk: the SQLite VFS its databases are opened through, and the system
/// calls its chunk pack makes. `.system` (the default everywhere) is SQLite's default VFS and plain
/// system calls. Why a seam: so that tests can put a disk that fails on purpose (full, I/O errors,
/// failed syncs, torn writes, power cuts) under the very code a node runs, and check that every
/// write the store acknowledged survives and every other one is reported as failed.
public struct DiskAccess: Sendable {
    /// The name of a registered SQLite VFS; nil for SQLite's default.
    public var vfs: String?
    /// The chunk pack's writes, syncs and reads.
    public var pack: any PackIO

    public init(vfs: String? = nil, pack: any PackIO = SystemPackIO()) {
        self.vfs = vfs
        self.pack = pack
    }

    /// The real disk.
    public static let system = DiskAccess()
}

/// The system calls through which the chunk pack (`ChunkPack`) changes and reads its file.
/// Each returns a count or 0, or a negated errno on failure.
public protocol PackIO: Sendable {
    /// pwrite(2) of `bytes` at `offset` of the file `path` open as `fd`: bytes written, or -errno.
    func pwrite(path: String, fd: Int32, _ bytes: UnsafeRawBufferPointer, at offset: Int) -> Int
    /// fdatasync(2): 0, or -errno.
    func fdatasync(path: String, fd: Int32) -> Int32
    /// Asked before `count` bytes at `offset` are read from the pack's memory map: 0, or -errno to
    /// fail the read with (a real disk's read error shows up in a mapped read as SIGBUS instead;
    /// this is where a test reports one).
    func checkRead(path: String, fd: Int32, offset: Int, count: Int) -> Int32
}

/// The real system calls.
public struct SystemPackIO: PackIO {
    public init() {}

    public func pwrite(path: String, fd: Int32, _ bytes: UnsafeRawBufferPointer, at offset: Int) -> Int {
        let result = Glibc.pwrite(fd, bytes.baseAddress, bytes.count, off_t(offset))
        return result < 0 ? -Int(errno) : result
    }

    public func fdatasync(path: String, fd: Int32) -> Int32 {
        Glibc.fdatasync(fd) == 0 ? 0 : -errno
    }

    public func checkRead(path: String, fd: Int32, offset: Int, count: Int) -> Int32 { 0 }
}
