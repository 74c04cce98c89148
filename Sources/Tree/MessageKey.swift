import Crypto

/// Message keys bound to their author (Protocol.md §5.4).
///
/// Why: the owner of a message must be fixed by something no other member can produce first.
/// Clocks are chosen by the signer, so "the author of the earliest write" can be won by
/// backdating; a key whose last 12 characters are a hash of the author's user id and the rest
/// of the key can be made only by that author (finding another key pair with the same 72 bits
/// is a search of about 2^72 key pairs for every message).
///
/// A bound key is a push id (20 characters, time-ordered) followed by its 12-character tag, so
/// keys still sort by creation time.
public enum MessageKey {
    /// Characters in the tag (6 bits each: 72 bits).
    public static let tagLength = 12

    /// The domain prefix of the tag's hash, so it is never a hash computed for another purpose.
    static let domain = Array("lanchat/message-key/v1".utf8) + [0]

    /// The tag that binds `prefix` to the user `authorID`: the first 9 bytes of
    /// BLAKE2b-256(domain || author's user id || prefix), 6 bits per character of the push id
    /// alphabet, most significant first.
    public static func tag(prefix: String, authorID: String) -> String {
        String(decoding: tagBytes(prefix: prefix.utf8, authorID: authorID), as: UTF8.self)
    }

    static func tagBytes(prefix: some Collection<UInt8>, authorID: String) -> [UInt8] {
        let digest = BLAKE2b.digest256(domain + Array(authorID.utf8) + Array(prefix)).bytes
        var bits: UInt128 = 0
        for byte in digest.prefix(9) { bits = bits << 8 | UInt128(byte) }
        var characters = [UInt8](repeating: 0, count: tagLength)
        for position in stride(from: tagLength - 1, through: 0, by: -1) {
            characters[position] = PushIDGenerator.alphabet[Int(bits & 63)]
            bits >>= 6
        }
        return characters
    }

    /// `prefix` with the tag that binds it to `authorID` appended.
    public static func bind(_ prefix: String, to authorID: String) -> String {
        prefix + tag(prefix: prefix, authorID: authorID)
    }

    /// Whether `key` is bound to `authorID`: longer than a tag, and ending with the tag of the
    /// rest of the key for that author.
    public static func isBound(_ key: String, to authorID: String) -> Bool {
        let bytes = key.utf8
        guard bytes.count > tagLength else { return false }
        let split = bytes.index(bytes.endIndex, offsetBy: -tagLength)
        return tagBytes(prefix: bytes[..<split], authorID: authorID).elementsEqual(bytes[split...])
    }
}
