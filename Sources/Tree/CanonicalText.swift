// Foundation is imported for Unicode normalization (NFC), which the standard library does not
// expose. Pure computation, no IO.
import Foundation

/// The one spelling of a key (Protocol.md §5.1): Unicode Normalization Form C.
///
/// Why: "é" can be written as one scalar (U+00E9) or as "e" and U+0301. Swift's `String`
/// equality and hashing treat the two as equal while SQLite and UTF-8 byte comparisons do not,
/// so a key spelled both ways would be one key in a dictionary and two in the store. Taking every
/// key, path and storage path in NFC before it is compared, stored or shown makes "the same key"
/// mean the same bytes everywhere. NFC is the form text usually arrives in already, and the one
/// the Unicode stability policy fixes for every assigned character.
public enum CanonicalText {
    /// `text` in NFC. Text that is all ASCII (nearly every key: push ids, user ids, field names)
    /// is NFC already and is returned as it is without a call into Foundation.
    @inline(__always)
    public static func nfc(_ text: String) -> String {
        isASCII(text) ? text : text.precomposedStringWithCanonicalMapping
    }

    /// Whether `text` is in NFC (bytewise equal to its normalization).
    public static func isNFC(_ text: String) -> Bool {
        isASCII(text) || text.utf8.elementsEqual(text.precomposedStringWithCanonicalMapping.utf8)
    }

    /// Whether every byte of `text` is ASCII; such text is its own NFC.
    @inline(__always)
    public static func isASCII(_ text: String) -> Bool {
        if let ascii = text.utf8.withContiguousStorageIfAvailable({ bytes in bytes.allSatisfy { $0 < 0x80 } }) {
            return ascii
        }
        return text.utf8.allSatisfy { $0 < 0x80 }
    }
}
