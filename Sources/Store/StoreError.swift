import SQLite
#if canImport(Glibc)
import Glibc
#endif

/// Failures of the store, each with the message a user reads.
public enum StoreError: Error, CustomStringConvertible {
    /// The data directory does not exist or holds no identity.
    case notInitialized(directory: String)
    /// `init` on a directory that already has an identity.
    case alreadyInitialized(directory: String)
    /// The key file is unsafe or damaged.
    case badKeyFile(path: String, reason: String)
    /// A file system operation failed.
    case io(path: String, reason: String)
    /// SQLite reported an error.
    case database(SQLiteError)
    /// A local write the write rules would ignore (another user's profile, someone else's
    /// message, a message whose senderId is not the writer): refused instead of signed.
    case permissionDenied(path: String)
    /// The database file is not a lanchat store or is damaged.
    case corrupt(path: String, reason: String)
    /// A write found the disk (or the user's quota) full. The write was not acknowledged; the
    /// store stays sound and takes writes again once there is space.
    case diskFull(path: String)
    /// The disk reported an I/O error reading, writing or syncing `path`. The operation was not
    /// acknowledged; the store is checked again when it is next opened.
    case diskFailure(path: String, reason: String)

    public var description: String {
        switch self {
        case let .notInitialized(dir): return "no lanchat identity in \(dir) (run `lanchat init --name \"First Last\"` first)"
        case let .alreadyInitialized(dir): return "\(dir) already holds a lanchat identity"
        case let .badKeyFile(path, reason): return "key file \(path): \(reason)"
        case let .io(path, reason): return "\(path): \(reason)"
        case let .database(e): return "database error: \(e)"
        case let .permissionDenied(path): return "permission denied: this user may not write \(path)"
        case let .corrupt(path, reason): return "store \(path) is damaged or not a lanchat store: \(reason)"
        case let .diskFull(path): return "disk full: could not write \(path); free some space and try again"
        case let .diskFailure(path, reason): return "disk error on \(path): \(reason)"
        }
    }
}

extension StoreError {
    /// What an SQLite error on the file at `path` is to the store's users: a full disk and an I/O
    /// error are told as such, with the file; anything else stays a database error.
    static func from(_ error: SQLiteError, path: String) -> StoreError {
        if error.isFull { return .diskFull(path: path) }
        if error.isIOError { return .diskFailure(path: path, reason: "\(error.message) (SQLite code \(error.extendedCode))") }
        return .database(error)
    }

    /// The error of a failed system call on the file at `path` (`errno` positive): ENOSPC and
    /// EDQUOT are a full disk, anything else a disk failure.
    static func from(errno code: Int32, path: String, doing operation: String) -> StoreError {
        if code == ENOSPC || code == EDQUOT { return .diskFull(path: path) }
        return .diskFailure(path: path, reason: "\(operation): \(String(cString: strerror(code)))")
    }

    /// Whether this error says the disk is full (from the store, or from SQLite directly).
    public var isDiskFull: Bool {
        switch self {
        case .diskFull: return true
        case let .database(error): return error.isFull
        default: return false
        }
    }
}
