import Crypto
import Wire

/// Files sent into a private conversation (Protocol.md §11.7): the bytes are sealed under a
/// fresh random per-file key before they are cut into chunks, and the key travels only inside
/// the sealed message that names the file. Every node checks and relays the chunks by their
/// hashes as for any file (§3.5: the hashes are of the ciphertext); only members read them.
///
/// The plaintext is cut into segments of `segmentSize` bytes, each sealed on its own with
/// XChaCha20-Poly1305 so that a sealed segment is exactly one 64 KiB chunk. The nonce is the
/// segment's index (a key seals one file only, so no nonce repeats), and the associated data
/// binds the index and whether the segment is the last: segments cannot be reordered, dropped,
/// duplicated or cut short without failing to open. Pure: bytes and keys in, bytes out.
public enum SealedFile {
    /// The media type of a sealed file's manifest: it says nothing of what the file holds.
    public static let contentType = "application/x-lanchat-sealed"
    public static let keyByteCount = 32
    /// Plaintext bytes per segment: a sealed segment (plus its 16-byte tag) is one 64 KiB chunk.
    public static let segmentSize = 65_536 - XChaChaPoly.tagByteCount
    static let label: [UInt8] = Array("lanchat/sealed-file/v1".utf8)

    /// A fresh per-file key from libsodium's generator.
    public static func makeKey() -> [UInt8] { secureRandomBytes(keyByteCount) }

    /// The key as a message carries it (`photoKey`): unpadded base64url, 43 characters.
    public static func encodeKey(_ key: [UInt8]) -> String { Base64URL.encode(key) }

    /// The key a `photoKey` value names, or nil if it is not 32 bytes in unpadded base64url.
    public static func decodeKey(_ text: String) -> [UInt8]? {
        guard text.utf8.count == 43, let bytes = Base64URL.decode(text), bytes.count == keyByteCount else { return nil }
        return bytes
    }

    /// Nonce of segment `index`: the index as u64be, then 16 zero bytes.
    static func nonce(_ index: Int) -> [UInt8] {
        bigEndian(UInt64(index)) + [UInt8](repeating: 0, count: XChaChaPoly.nonceByteCount - 8)
    }

    /// Associated data of segment `index`: the label, a zero byte, the index as u64be and 1 for
    /// the last segment (0 otherwise).
    static func ad(_ index: Int, last: Bool) -> [UInt8] {
        label + [0] + bigEndian(UInt64(index)) + [last ? 1 : 0]
    }

    static func bigEndian(_ value: UInt64) -> [UInt8] {
        stride(from: 56, through: 0, by: -8).map { UInt8(truncatingIfNeeded: value >> UInt64($0)) }
    }

    /// The size of the sealed form of `plainSize` bytes (at least 1).
    public static func sealedSize(_ plainSize: Int) -> Int {
        plainSize + (plainSize + segmentSize - 1) / segmentSize * XChaChaPoly.tagByteCount
    }

    /// The sealed bytes of `plaintext` (not empty) under `key`.
    public static func seal(_ plaintext: [UInt8], key: [UInt8]) -> [UInt8] {
        precondition(!plaintext.isEmpty && key.count == keyByteCount)
        let secret = SecretBytes(key)
        var out = [UInt8]()
        out.reserveCapacity(sealedSize(plaintext.count))
        var index = 0
        for start in stride(from: 0, to: plaintext.count, by: segmentSize) {
            let end = min(start + segmentSize, plaintext.count)
            let nonce = nonce(index)
            let sealed = XChaChaPoly.seal(Array(plaintext[start..<end]), key: secret, ad: ad(index, last: end == plaintext.count), nonce: nonce)
            out += sealed[nonce.count...]  // the nonce is the index: not carried
            index += 1
        }
        return out
    }

    /// The plaintext of a sealed file, or `undecryptable` if any segment does not open under
    /// `key` in its place (another file's bytes, a wrong key, a changed, reordered or cut file).
    public static func open(_ sealed: [UInt8], key: [UInt8]) throws(PrivateError) -> [UInt8] {
        guard key.count == keyByteCount, !sealed.isEmpty else { throw .undecryptable }
        let secret = SecretBytes(key)
        let chunk = segmentSize + XChaChaPoly.tagByteCount
        var out = [UInt8]()
        out.reserveCapacity(sealed.count)
        var index = 0
        for start in stride(from: 0, to: sealed.count, by: chunk) {
            let end = min(start + chunk, sealed.count)
            guard end - start > XChaChaPoly.tagByteCount,
                  let plain = XChaChaPoly.open(nonce(index) + sealed[start..<end], key: secret, ad: ad(index, last: end == sealed.count))
            else { throw .undecryptable }
            out += plain
            index += 1
        }
        return out
    }
}
