// Foundation is imported for the Unicode compatibility decomposition (NFKD), which the standard
// library does not expose (CanonicalText.swift is the other file of Tree that imports it, for
// NFC). It is pure computation, no IO.
import Foundation

/// Folds text for search: the users directory indexes folded names and emails, and folds each
/// query the same way, so matching is a plain substring test on folded text.
///
/// What folding does, in order:
/// 1. Compatibility decomposition (NFKD): full-width and other compatibility forms become their
///    plain letters ("ＡＬＩＣＥ" → "ALICE", "ﬁ" → "fi"), accented letters split into a base letter
///    and combining marks, and Hangul syllables split into conjoining jamo.
/// 2. Combining and enclosing marks are removed (Vietnamese and Latin accents, Arabic harakat,
///    the hamza carried by alef), as are control and format characters and the Arabic tatweel.
/// 3. Lowercase, then letters that have no decomposition but that readers treat as the plain
///    letter: đ ð → d, ø → o, ł → l, ß → ss, æ → ae, œ → oe, þ → th, ı → i, ħ → h, ŧ → t,
///    final ς → σ; Arabic alef maksura ى → ي, teh marbuta ة → ه, alef wasla ٱ → ا, and the
///    Persian forms ی → ي, ک → ك.
/// 4. Hangul final consonants become the matching initial consonants, and final clusters split
///    into their two consonants. A syllable typed so far ("준" while typing "주나"), a lone jamo
///    ("ㅈ") and a whole syllable then fold to the same sequence as the stored name, so Korean
///    matches as it is typed.
/// 5. Runs of whitespace become one space; leading and trailing whitespace go.
public enum TextFolding {
    public static func fold(_ s: String) -> String {
        if let ascii = foldASCII(s) { return ascii }
        if let latin = foldLatin(s) { return latin }
        return foldUnicode(s)
    }

    /// The general path of `fold`, for any text (internal so tests can hold `foldASCII` to it).
    static func foldUnicode(_ s: String) -> String {
        var out = String.UnicodeScalarView()
        var pendingSpace = false
        for scalar in s.decomposedStringWithCompatibilityMapping.unicodeScalars {
            let properties = scalar.properties
            if properties.isWhitespace {
                pendingSpace = !out.isEmpty
                continue
            }
            if isDropped(properties.generalCategory) || scalar.value == 0x0640 { continue }
            for lower in properties.lowercaseMapping.unicodeScalars {
                if isDropped(lower.properties.generalCategory) { continue }
                if pendingSpace {
                    out.append(" ")
                    pendingSpace = false
                }
                appendFolded(lower, to: &out)
            }
        }
        return String(out)
    }

    /// `fold` for text that is all ASCII, or nil for any other text. Most queries and emails are
    /// ASCII, and the general path spends most of its time in Foundation's decomposition, which
    /// changes no ASCII character; the steps that remain for ASCII are lowercasing, dropping the
    /// control characters (the ASCII whitespace among them counts as whitespace first), and
    /// collapsing whitespace, exactly as the general path does them.
    static func foldASCII(_ s: String) -> String? {
        var s = s
        return s.withUTF8 { bytes -> String? in
            var out = [UInt8]()
            out.reserveCapacity(bytes.count)
            var pendingSpace = false
            for byte in bytes {
                switch byte {
                case 0x80...: return nil
                case 0x09...0x0D, 0x20:
                    pendingSpace = !out.isEmpty
                    continue
                case 0x00..<0x20, 0x7F:
                    continue
                default:
                    if pendingSpace {
                        out.append(0x20)
                        pendingSpace = false
                    }
                    out.append((0x41...0x5A).contains(byte) ? byte + 0x20 : byte)
                }
            }
            return String(decoding: out, as: UTF8.self)
        }
    }

    /// `fold` for text of ASCII, Latin letters (U+00C0 ... U+024F, U+1E00 ... U+1EFF: the
    /// accented letters of Vietnamese, German, French and the like) and combining diacritics,
    /// or nil for any other text. Such a letter folds the same alone as within any text (its
    /// decomposition is a base letter and marks, which folding drops, whatever surrounds it), so
    /// each one's fold is computed once by the general path (`latinLetters`) and looked up.
    static func foldLatin(_ s: String) -> String? {
        var out = String.UnicodeScalarView()
        var pendingSpace = false
        for scalar in s.unicodeScalars {
            let v = scalar.value
            switch v {
            case 0x09...0x0D, 0x20:
                pendingSpace = !out.isEmpty
            case 0x00..<0x20, 0x7F, 0x300...0x36F:
                continue  // controls, and combining diacritics (marks, dropped by the general path)
            case 0x21..<0x7F:
                if pendingSpace {
                    out.append(" ")
                    pendingSpace = false
                }
                out.append((0x41...0x5A).contains(v) ? Unicode.Scalar(v + 0x20)! : scalar)
            default:
                guard let folded = latinLetters[v] else { return nil }
                if pendingSpace {
                    out.append(" ")
                    pendingSpace = false
                }
                out.append(contentsOf: folded.unicodeScalars)
            }
        }
        return String(out)
    }

    /// The fold of each Latin letter `foldLatin` handles; letters whose fold is empty or holds
    /// whitespace are left out (their text takes the general path).
    static let latinLetters: [UInt32: String] = {
        var table = [UInt32: String]()
        for v in Array(UInt32(0xC0)...0x24F) + Array(UInt32(0x1E00)...0x1EFF) {
            guard let scalar = Unicode.Scalar(v), !scalar.properties.isWhitespace else { continue }
            let folded = foldUnicode(String(Character(scalar)))
            guard !folded.isEmpty, !folded.unicodeScalars.contains(where: { $0.properties.isWhitespace }) else { continue }
            table[v] = folded
        }
        return table
    }()

    private static func isDropped(_ category: Unicode.GeneralCategory) -> Bool {
        switch category {
        case .nonspacingMark, .enclosingMark, .control, .format, .surrogate, .unassigned: return true
        default: return false
        }
    }

    private static func appendFolded(_ scalar: Unicode.Scalar, to out: inout String.UnicodeScalarView) {
        let v = scalar.value
        if (0x11A8...0x11C2).contains(v) {
            for initial in hangulFinals[Int(v - 0x11A8)] { out.append(Unicode.Scalar(initial)!) }
            return
        }
        if let replacement = letters[v] {
            out.append(contentsOf: replacement.unicodeScalars)
            return
        }
        out.append(scalar)
    }

    /// Letters without a decomposition, folded to what users type for them.
    private static let letters: [UInt32: String] = [
        0x0111: "d", 0x00F0: "d", 0x00F8: "o", 0x0142: "l", 0x00DF: "ss", 0x00E6: "ae", 0x0153: "oe",
        0x00FE: "th", 0x0131: "i", 0x0127: "h", 0x0167: "t", 0x03C2: "\u{03C3}",
        0x0649: "\u{064A}", 0x0629: "\u{0647}", 0x0671: "\u{0627}", 0x06CC: "\u{064A}", 0x06A9: "\u{0643}",
    ]

    /// Hangul final consonants (U+11A8 ... U+11C2) as initial consonants (U+1100 ...).
    private static let hangulFinals: [[UInt32]] = [
        [0x1100], [0x1101], [0x1100, 0x1109], [0x1102], [0x1102, 0x110C], [0x1102, 0x1112], [0x1103],
        [0x1105], [0x1105, 0x1100], [0x1105, 0x1106], [0x1105, 0x1107], [0x1105, 0x1109], [0x1105, 0x1110],
        [0x1105, 0x1111], [0x1105, 0x1112], [0x1106], [0x1107], [0x1107, 0x1109], [0x1109], [0x110A],
        [0x110B], [0x110C], [0x110E], [0x110F], [0x1110], [0x1111], [0x1112],
    ]
}
