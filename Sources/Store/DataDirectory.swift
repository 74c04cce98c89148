#if canImport(Glibc)
import Glibc
#endif

/// The layout of a node's data directory: `identity.key` (the Ed25519 seed, mode 0600),
/// `store.sqlite` (records and the materialized tree, in WAL mode) and beside it
/// `store.chunks.pack` and `store.chunks.sqlite` (the chunks of files and their index, see
/// `ChunkStore`).
public struct DataDirectory: Sendable {
    public let path: String

    public init(path: String) { self.path = path }

    /// `--data DIR`, else `$LANCHAT_DATA`, else `~/.lanchat`.
    public static func resolve(option: String?, environment: [String: String]) -> DataDirectory {
        if let option, !option.isEmpty { return DataDirectory(path: option) }
        if let env = environment["LANCHAT_DATA"], !env.isEmpty { return DataDirectory(path: env) }
        let home = environment["HOME"] ?? "."
        return DataDirectory(path: home + "/.lanchat")
    }

    public var keyPath: String { path + "/identity.key" }
    public var databasePath: String { path + "/store.sqlite" }

    /// Whether an identity exists here.
    public var isInitialized: Bool { access(keyPath, F_OK) == 0 }

    /// Creates the directory (mode 0700) if it is missing; an existing one must be a directory.
    public func createIfNeeded() throws(StoreError) {
        var info = stat()
        if stat(path, &info) == 0 {
            guard info.st_mode & S_IFMT == S_IFDIR else { throw .io(path: path, reason: "not a directory") }
            return
        }
        guard mkdir(path, 0o700) == 0 else { throw .io(path: path, reason: String(cString: strerror(errno))) }
    }

    /// Fails with a clear message unless the directory holds an identity.
    public func requireInitialized() throws(StoreError) {
        var info = stat()
        guard stat(path, &info) == 0, info.st_mode & S_IFMT == S_IFDIR else { throw .notInitialized(directory: path) }
        guard access(path, R_OK | W_OK | X_OK) == 0 else {
            throw .io(path: path, reason: "data directory is not readable and writable by this user")
        }
        guard isInitialized else { throw .notInitialized(directory: path) }
    }
}
