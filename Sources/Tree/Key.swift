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
        _ = try validateNotingASCII(key)
    }

    /// `validate`, returning whether the key is all ASCII (then it is its own NFC), from the
    /// same pass over its bytes.
    static func validateNotingASCII(_ key: String) throws(TreeError) -> Bool {
        guard !key.utf8.isEmpty else { throw .invalidKey(key, reason: "key is empty") }
        var ascii = true
        for byte in key.utf8 {
            switch byte {
            case 0x00..<0x20, 0x7F:
                let hex = String(byte, radix: 16, uppercase: true)
                throw .invalidKey(key, reason: "contains control character 0x\(hex.count < 2 ? "0" + hex : hex)")
            case UInt8(ascii: "."), UInt8(ascii: "#"), UInt8(ascii: "$"),
                 UInt8(ascii: "/"), UInt8(ascii: "["), UInt8(ascii: "]"):
                throw .invalidKey(key, reason: "contains forbidden character '\(Character(Unicode.Scalar(byte)))'")
            case 0x80...:
                ascii = false
            default:
                continue
            }
        }
        return ascii
    }

    /// The key's one spelling, Unicode NFC (`CanonicalText`), once it is checked: what paths and
    /// tree objects hold, so that canonically equivalent keys are one key (Protocol.md §5.1).
    /// Throws what `validate` throws for the NFC form.
    public static func canonical(_ key: String) throws(TreeError) -> String {
        // An ASCII key is checked in one pass; any other is checked again in NFC, the form that
        // counts (NFC changes no ASCII character, but a singleton such as U+212A becomes one).
        if try validateNotingASCII(key) { return key }
        let nfc = CanonicalText.nfc(key)
        try validate(nfc)
        return nfc
    }

    /// Whether `validate` would accept the key.
    public static func isValid(_ key: String) -> Bool {
        do { try validate(key); return true } catch { return false }
    }
}
