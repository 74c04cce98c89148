/// The rules for a single key (one path segment).
///
/// Keys become path segments, SQLite keys and JSON member names on every peer,
/// so anything Firebase would refuse is refused here too.
public enum Key: Sendable {
    /// The characters Firebase forbids in keys.
    public static let forbiddenCharacters: Set<Character> = [".", "#", "$", "/", "[", "]"]

    /// Throws `TreeError.invalidKey` unless the key is non-empty and free of
    /// `. # $ / [ ]`, ASCII control characters and DEL. Length is a property
    /// of whole paths and is checked by `Path`.
    public static func validate(_ key: String) throws(TreeError) {
        guard !key.utf8.isEmpty else { throw .invalidKey(key, reason: "key is empty") }
        for byte in key.utf8 {
            switch byte {
            case 0x00..<0x20, 0x7F:
                let hex = String(byte, radix: 16, uppercase: true)
                throw .invalidKey(key, reason: "contains control character 0x\(hex.count < 2 ? "0" + hex : hex)")
            case UInt8(ascii: "."), UInt8(ascii: "#"), UInt8(ascii: "$"),
                 UInt8(ascii: "/"), UInt8(ascii: "["), UInt8(ascii: "]"):
                throw .invalidKey(key, reason: "contains forbidden character '\(Character(Unicode.Scalar(byte)))'")
            default:
                continue
            }
        }
    }

    /// The key's one spelling, Unicode NFC (`CanonicalText`), once it is checked: what paths and
    /// tree objects hold, so that canonically equivalent keys are one key (Protocol.md §5.1).
    /// Throws what `validate` throws for the NFC form.
    public static func canonical(_ key: String) throws(TreeError) -> String {
        let nfc = CanonicalText.nfc(key)
        try validate(nfc)
        return nfc
    }

    /// Whether `validate` would accept the key.
    public static func isValid(_ key: String) -> Bool {
        do { try validate(key); return true } catch { return false }
    }
}
