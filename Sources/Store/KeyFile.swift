import Crypto
#if canImport(Glibc)
import Glibc
#endif

/// The identity key on disk: exactly the 32-byte Ed25519 seed, readable by its owner only.
/// A key file that others could read is refused rather than silently used, as ssh does.
public enum KeyFile {
    /// Writes a new key file; fails if one exists (never overwrites an identity).
    public static func create(_ key: PrivateKey, at path: String) throws(StoreError) {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw .io(path: path, reason: String(cString: strerror(errno))) }
        defer { close(fd) }
        var seed = key.seed().copyBytes()
        defer { for i in seed.indices { seed[i] = 0 } }
        let written = seed.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        guard written == seed.count, fsync(fd) == 0 else {
            unlink(path)
            throw .io(path: path, reason: "could not write the key file")
        }
    }

    /// Reads a key file, refusing group/other permissions and any size but 32 bytes.
    public static func load(from path: String) throws(StoreError) -> PrivateKey {
        var info = stat()
        guard stat(path, &info) == 0 else {
            throw .badKeyFile(path: path, reason: String(cString: strerror(errno)))
        }
        let mode = info.st_mode & 0o777
        guard mode & 0o077 == 0 else {
            throw .badKeyFile(path: path, reason: "permissions \(String(mode, radix: 8)) are too open; it must be readable by its owner only (chmod 600 \(path))")
        }
        guard info.st_size == off_t(PrivateKey.seedByteCount) else {
            throw .badKeyFile(path: path, reason: "expected \(PrivateKey.seedByteCount) bytes, found \(info.st_size)")
        }
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw .badKeyFile(path: path, reason: String(cString: strerror(errno))) }
        defer { close(fd) }
        var seed = [UInt8](repeating: 0, count: PrivateKey.seedByteCount)
        defer { for i in seed.indices { seed[i] = 0 } }
        let got = seed.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        guard got == seed.count else { throw .badKeyFile(path: path, reason: "could not read 32 bytes") }
        do { return try PrivateKey(seedBytes: seed) } catch { throw .badKeyFile(path: path, reason: "\(error)") }
    }
}
