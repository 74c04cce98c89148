import Crypto
import Foundation
import Store
#if canImport(Glibc)
import Glibc
#endif

/// The local API's bearer token: random, kept in the data directory as `api.token` (mode 0600)
/// so `lanchat status` can show it, unless `--api-token` sets one.
public enum APIToken {
    public static func path(_ directory: DataDirectory) -> String { directory.path + "/api.token" }

    /// The stored token, created on first use.
    public static func loadOrCreate(_ directory: DataDirectory) throws -> String {
        let path = path(directory)
        if let data = FileManager.default.contents(atPath: path) {
            let token = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            if !token.isEmpty { return token }
        }
        let token = Base64URL.encode(secureRandomBytes(24))
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw StoreError.io(path: path, reason: String(cString: strerror(errno))) }
        defer { close(fd) }
        let bytes = Array((token + "\n").utf8)
        guard write(fd, bytes, bytes.count) == bytes.count else { throw StoreError.io(path: path, reason: "could not write the token") }
        return token
    }

    /// The stored token if there is one (for the CLI).
    public static func load(_ directory: DataDirectory) -> String? {
        guard let data = FileManager.default.contents(atPath: path(directory)) else { return nil }
        let token = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        return token.isEmpty ? nil : token
    }
}
