internal import CFaultDisk
import Foundation
import SQLite
import Store
#if canImport(Glibc)
import Glibc
#endif

/// A disk that fails on purpose, under a real `Store`: a fault-injecting SQLite VFS (named
/// `FaultDisk.vfsName`, wrapping the default unix VFS) and the same faults for the chunk pack's
/// system calls (`FaultPackIO`). For tests only; production stores open with `DiskAccess.system`.
///
/// One disk per process: its state is global in C, because SQLite reaches the VFS from whatever
/// thread a connection runs on (the store's, a background checkpointer's). So every test that
/// arms it runs inside `FaultDisk.exclusive`, which keeps other such tests out meanwhile.
///
/// Faults (`Kind`) are armed on classes of file (`Files`) after a number of matching operations,
/// once or on every one after. Every write since a file's last successful sync is remembered, so
/// `crash()` followed by `powerCut` models losing power: what was synced stays, what was not is
/// undone (or, with `keepUnsyncedPercent`, partly kept and torn, as a disk reorders its cache).
public final class FaultDisk: Sendable {
    /// The name the VFS is registered under.
    public static let vfsName = "lanchat-faults"

    /// A kind of fault.
    public enum Kind: Int32, CaseIterable, Sendable, CustomStringConvertible {
        /// A write finds the disk full (SQLITE_FULL, ENOSPC); nothing is written.
        case diskFull = 1
        /// A write fails with an I/O error (SQLITE_IOERR_WRITE, EIO); nothing is written.
        case writeError = 2
        /// A read fails with an I/O error (SQLITE_IOERR_READ, EIO).
        case readError = 3
        /// An fsync fails (SQLITE_IOERR_FSYNC, EIO); nothing is synced.
        case syncFailure = 4
        /// A prefix of a write reaches the disk, then the power goes: every later write fails.
        case tornWrite = 5
        /// The power goes just before a write: it and every later write and sync fail. Whatever
        /// the interrupted operation wrote before is unsynced, for `powerCut` to undo or keep.
        case powerCut = 6

        public var description: String {
            switch self {
            case .diskFull: return "disk full"
            case .writeError: return "EIO on write"
            case .readError: return "EIO on read"
            case .syncFailure: return "fsync failure"
            case .tornWrite: return "torn write"
            case .powerCut: return "power cut mid-write"
            }
        }
    }

    /// Classes of file a fault applies to.
    public struct Files: OptionSet, Sendable {
        public let rawValue: Int32
        public init(rawValue: Int32) { self.rawValue = rawValue }
        /// A database file (the store or the chunk index).
        public static let mainDB = Files(rawValue: 1)
        /// A write-ahead log.
        public static let wal = Files(rawValue: 2)
        /// A rollback journal.
        public static let journal = Files(rawValue: 4)
        /// The chunk pack.
        public static let pack = Files(rawValue: 8)
        /// Anything else SQLite opens (temporary files).
        public static let other = Files(rawValue: 16)
        public static let all: Files = [.mainDB, .wal, .journal, .pack, .other]
    }

    /// An operation counted per class of file.
    public enum Operation: Int32, CaseIterable, Sendable {
        case read = 0, write = 1, sync = 2, truncate = 3
    }

    private init() {
        Connection.configureOnce()  // registering initializes SQLite
        let rc = fault_disk_register(Self.vfsName)
        precondition(rc == 0, "registering the fault VFS failed with SQLite code \(rc)")
    }

    private static let disk = FaultDisk()
    private static let owner = NSLock()

    /// Runs `body` with the disk, reset (no fault armed, nothing tracked, counters at zero), while
    /// no other caller holds it; resets it again afterwards.
    public static func exclusive<T>(_ body: (FaultDisk) throws -> T) rethrows -> T {
        try owner.withLock {
            fault_disk_reset()
            defer { fault_disk_reset() }
            return try body(disk)
        }
    }

    /// How a store reaches this disk.
    public var access: DiskAccess { DiskAccess(vfs: Self.vfsName, pack: FaultPackIO()) }

    /// Arms `kind` on `files`: the first `after` matching operations go through, then the fault is
    /// injected once, or on every matching operation until `disarm` (`sticky`). `seed` sets where
    /// a torn write is cut. Replaces any armed fault.
    public func arm(_ kind: Kind, on files: Files = .all, after: Int = 0, sticky: Bool = false, seed: UInt64 = 0) {
        fault_disk_arm(kind.rawValue, files.rawValue, after, sticky ? 1 : 0, seed)
    }

    /// The disk works again (unless it is gone: `isCrashed`).
    public func disarm() { fault_disk_disarm() }

    /// Whether the armed fault was injected at least once.
    public var fired: Bool { fault_disk_fired() != 0 }

    /// The machine stops: every later write, sync and delete fails and changes nothing.
    public func crash() { fault_disk_crash() }

    /// Whether the disk is gone (a crash or a torn write).
    public var isCrashed: Bool { fault_disk_is_crashed() != 0 }

    /// Power comes back after a cut: each file is what was last synced, plus each unsynced write
    /// with probability `keepUnsyncedPercent`% (some of them torn). Call with every store closed.
    /// Returns how many unsynced writes were undone.
    @discardableResult
    public func powerCut(seed: UInt64, keepUnsyncedPercent: Int = 0) -> Int {
        fault_disk_power_cut(seed, Int32(keepUnsyncedPercent))
    }

    /// Faults of `kind` injected since the disk was last reset.
    public func injected(_ kind: Kind) -> Int { fault_disk_injected(kind.rawValue) }

    /// Operations of one kind on one class of file (a single class) since the last reset.
    public func operations(_ operation: Operation, on file: Files) -> Int {
        let index = [Files.mainDB, .wal, .journal, .pack, .other].firstIndex(of: file) ?? 4
        return fault_disk_operations(Int32(index), operation.rawValue)
    }
}

/// The chunk pack's system calls through the fault disk.
public struct FaultPackIO: PackIO {
    public init() {}

    public func pwrite(path: String, fd: Int32, _ bytes: UnsafeRawBufferPointer, at offset: Int) -> Int {
        let result = fault_disk_pwrite(path, fd, bytes.baseAddress, bytes.count, off_t(offset))
        return result < 0 ? -Int(errno) : result
    }

    public func fdatasync(path: String, fd: Int32) -> Int32 {
        fault_disk_fdatasync(path, fd) == 0 ? 0 : -errno
    }

    public func checkRead(path: String, fd: Int32, offset: Int, count: Int) -> Int32 {
        -fault_disk_check_read(path, fd, off_t(offset), count)
    }
}
