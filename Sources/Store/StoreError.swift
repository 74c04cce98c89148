import SQLite

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

    public var description: String {
        switch self {
        case let .notInitialized(dir): return "no lanchat identity in \(dir) (run `lanchat init --name \"First Last\"` first)"
        case let .alreadyInitialized(dir): return "\(dir) already holds a lanchat identity"
        case let .badKeyFile(path, reason): return "key file \(path): \(reason)"
        case let .io(path, reason): return "\(path): \(reason)"
        case let .database(e): return "database error: \(e)"
        case let .permissionDenied(path): return "permission denied: this user may not write \(path)"
        case let .corrupt(path, reason): return "store \(path) is damaged or not a lanchat store: \(reason)"
        }
    }
}
