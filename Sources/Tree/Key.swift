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
        // A native string's bytes in place: walking its UTF-8 view instead cost several times
        // as much, for every key of every record a node takes in.
        let scan = key.utf8.withContiguousStorageIfAvailable { scanned($0) } ?? scanned(key.utf8)
        if let byte = scan.refused {
            if byte < 0x20 || byte == 0x7F {
                let hex = String(byte, radix: 16, uppercase: true)
                throw .invalidKey(key, reason: "contains control character 0x\(hex.count < 2 ? "0" + hex : hex)")
            }
            throw .invalidKey(key, reason: "contains forbidden character '\(Character(Unicode.Scalar(byte)))'")
        }
        return scan.ascii
    }

    /// Whether `bytes` spell a key that needs nothing more: not empty, all ASCII (so its own NFC)
    /// and free of the refused characters. Decoders check a key's bytes in place with it before
    /// making a string of them; any other key takes the full way (`canonical`), which says why.
    @inline(__always)
    public static func isPlainASCII(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard !bytes.isEmpty else { return false }
        let scan = scanned(bytes)
        return scan.refused == nil && scan.ascii
    }

    /// The first byte a key may not hold (a control character, DEL or one of `. # $ / [ ]`), and
    /// whether the bytes before it are all ASCII. Each byte is looked up in a 128-bit set of the
    /// refused ones rather than compared with each: every key of every record a node takes in
    /// passes here.
    @inline(__always)
    private static func scanned(_ bytes: some Sequence<UInt8>) -> (refused: UInt8?, ascii: Bool) {
        // Bit n set for each byte n below 64 a key may not hold: the control characters and
        // `# $ . /`; bit n - 64 for each from 64 to 127: `[`, `]` and DEL.
        let refusedBelow64: UInt64 = 0x0000_C018_FFFF_FFFF
        let refusedFrom64: UInt64 = 0x8000_0000_2800_0000
        var seen: UInt8 = 0  // every byte or'ed: 0x80 set once one is not ASCII
        for byte in bytes {
            seen |= byte
            let refused = byte < 64 ? refusedBelow64 : byte < 128 ? refusedFrom64 : 0
            if (refused >> UInt64(byte & 63)) & 1 != 0 { return (byte, seen < 0x80) }
        }
        return (nil, seen < 0x80)
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
