import Testing
@testable import Tree
import TestSupport

@Suite("Text folding")
struct TextFoldingTests {
    @Test("Vietnamese accents and đ fold to plain letters")
    func vietnamese() {
        #expect(TextFolding.fold("Nguyễn Văn An") == "nguyen van an")
        #expect(TextFolding.fold("Trần Thị Đào") == "tran thi dao")
        #expect(TextFolding.fold("Lê Đức Thọ") == "le duc tho")
        #expect(TextFolding.fold("đ") == TextFolding.fold("d"))
        #expect(TextFolding.fold("Đ") == "d")
    }

    @Test("composed and decomposed input fold the same")
    func normalizationForms() {
        let composed = "Nguy\u{1EC5}n"
        let decomposed = "Nguye\u{302}\u{303}n"
        #expect(TextFolding.fold(composed) == TextFolding.fold(decomposed))
        #expect(TextFolding.fold("\u{BC15}\u{C900}\u{C601}") == TextFolding.fold("\u{1107}\u{1161}\u{11A8}\u{110C}\u{116E}\u{11AB}\u{110B}\u{1167}\u{11BC}"))
    }

    @Test("German umlauts, ß and other letters without a decomposition")
    func german() {
        #expect(TextFolding.fold("Jürgen Müller") == "jurgen muller")
        #expect(TextFolding.fold("Straße") == "strasse")
        #expect(TextFolding.fold("STRASSE") == "strasse")
        #expect(TextFolding.fold("Søren Łukasz Æsir Œuvre") == "soren lukasz aesir oeuvre")
        #expect(TextFolding.fold("Istanbul ılık") == "istanbul ilik")
    }

    @Test("full-width and compatibility forms fold")
    func compatibility() {
        #expect(TextFolding.fold("ＡＬＩＣＥ") == "alice")
        #expect(TextFolding.fold("ﬁle") == "file")
        #expect(TextFolding.fold("①") == "1")
    }

    @Test("whitespace collapses and trims; controls and format characters go")
    func whitespace() {
        #expect(TextFolding.fold("  Alice \t\n  Smith  ") == "alice smith")
        #expect(TextFolding.fold("Ali\u{200B}ce\u{0}") == "alice")
        #expect(TextFolding.fold("\u{3000}Alice\u{3000}") == "alice")
        #expect(TextFolding.fold("   ") == "")
        #expect(TextFolding.fold("\u{301}") == "")
    }

    @Test("Arabic with and without harakat, hamza forms and tatweel fold together")
    func arabic() {
        #expect(TextFolding.fold("مُحَمَّد عَلِيّ") == TextFolding.fold("محمد علي"))
        #expect(TextFolding.fold("أحمد") == TextFolding.fold("احمد"))
        #expect(TextFolding.fold("إبراهيم") == TextFolding.fold("ابراهيم"))
        #expect(TextFolding.fold("محـــمد") == TextFolding.fold("محمد"))
        #expect(TextFolding.fold("ليلى") == TextFolding.fold("ليلي"))
        #expect(TextFolding.fold("فاطمة") == TextFolding.fold("فاطمه"))
    }

    @Test("Hangul: syllables, jamo and partial syllables fold consistently")
    func hangul() {
        let name = TextFolding.fold("박준영")
        #expect(scalarsContain(name, TextFolding.fold("준영")))
        #expect(scalarsContain(name, TextFolding.fold("준")))
        #expect(name.unicodeScalars.starts(with: TextFolding.fold("ㅂ").unicodeScalars))
        #expect(name.unicodeScalars.starts(with: TextFolding.fold("바").unicodeScalars))
        // A final consonant folds like the initial one: "준" typed on the way to "주나" matches it.
        #expect(TextFolding.fold("주나").unicodeScalars.starts(with: TextFolding.fold("준").unicodeScalars))
        // A final cluster splits into its consonants: "갅" typed on the way to "간지".
        #expect(TextFolding.fold("간지").unicodeScalars.starts(with: TextFolding.fold("갅").unicodeScalars))
        #expect(!TextFolding.fold("김민수").unicodeScalars.elementsEqual(TextFolding.fold("이서연").unicodeScalars))
    }

    @Test("folding is idempotent")
    func idempotent() {
        for text in ["Nguyễn Văn An", "박준영", "ＡＬＩＣＥ", "Straße", "مُحَمَّد", "Łódź", "  a  b "] {
            let once = TextFolding.fold(text)
            #expect(TextFolding.fold(once) == once, "\(text)")
        }
    }

    @Test("the ASCII fast path folds every ASCII text exactly as the general path")
    func asciiFastPath() {
        for byte in UInt8(0)...0x7F {
            let text = String(decoding: [byte, 0x41, byte, 0x20, 0x7A, byte], as: UTF8.self)
            #expect(TextFolding.foldASCII(text) == TextFolding.foldUnicode(text), "byte \(byte)")
        }
        var rng = SplitMix64(seed: 7)
        for _ in 0..<2_000 {
            let bytes = (0..<Int(rng.next() % 16)).map { _ in UInt8(rng.next() % 0x80) }
            let text = String(decoding: bytes, as: UTF8.self)
            #expect(TextFolding.foldASCII(text) == TextFolding.foldUnicode(text), "\(bytes)")
        }
        #expect(TextFolding.foldASCII("Nguyễn") == nil)
    }

    @Test("the Latin fast path folds every text it takes exactly as the general path")
    func latinFastPath() {
        let letters = (Array(UInt32(0xC0)...0x24F) + Array(UInt32(0x1E00)...0x1EFF)).compactMap(Unicode.Scalar.init)
        for letter in letters {
            let text = "A" + String(Character(letter)) + " x" + String(Character(letter))
            if let fast = TextFolding.foldLatin(text) { #expect(fast == TextFolding.foldUnicode(text), "U+\(String(letter.value, radix: 16))") }
        }
        var rng = SplitMix64(seed: 8)
        let pool: [Unicode.Scalar] = letters + (UInt32(0x300)...0x36F).compactMap(Unicode.Scalar.init) + (UInt32(0)...0x7F).compactMap(Unicode.Scalar.init)
        var taken = 0
        for _ in 0..<3_000 {
            var scalars = String.UnicodeScalarView()
            for _ in 0..<Int(rng.next() % 12) { scalars.append(pool[Int(rng.next() % UInt64(pool.count))]) }
            let text = String(scalars)
            guard let fast = TextFolding.foldLatin(text) else { continue }
            taken += 1
            #expect(fast == TextFolding.foldUnicode(text), "\(text.unicodeScalars.map { String($0.value, radix: 16) })")
        }
        #expect(taken > 2_000)
        #expect(TextFolding.foldLatin("Nguyễn Văn An") == "nguyen van an")
        #expect(TextFolding.foldLatin("박준영") == nil)
        #expect(TextFolding.fold("  Alice\tSMITH \n") == "alice smith")
    }
}

/// Substring test on scalars: `String.contains` compares grapheme clusters, and Hangul jamo of
/// neighbouring syllables can share one.
func scalarsContain(_ haystack: String, _ needle: String) -> Bool {
    let h = Array(haystack.unicodeScalars), n = Array(needle.unicodeScalars)
    guard n.count <= h.count else { return false }
    return (0...(h.count - n.count)).contains { h[$0..<($0 + n.count)].elementsEqual(n) }
}
