import Testing
import Tree

@Suite("Keys and paths")
struct PathAndKeyTests {
    @Test(arguments: [".", "#", "$", "/", "[", "]"])
    func rejectsForbiddenCharacters(_ character: String) {
        for key in [character, "a\(character)", "\(character)b", "x\(character)y"] {
            #expect(throws: TreeError.self) { try Key.validate(key) }
            #expect(!Key.isValid(key))
        }
        #expect(throws: TreeError.invalidKey("a\(character)", reason: "contains forbidden character '\(character)'")) {
            try Key.validate("a\(character)")
        }
    }

    @Test func rejectsControlCharactersAndDEL() {
        for byte in Array(0x00...0x1F) + [0x7F] {
            let key = "k" + String(Character(Unicode.Scalar(UInt8(byte)))) + "k"
            #expect(!Key.isValid(key), "byte \(byte)")
        }
        #expect(throws: TreeError.invalidKey("a\u{7F}", reason: "contains control character 0x7F")) {
            try Key.validate("a\u{7F}")
        }
        #expect(throws: TreeError.invalidKey("\u{1}", reason: "contains control character 0x01")) {
            try Key.validate("\u{1}")
        }
    }

    @Test("every ASCII byte, alone, first, last and inside a key, accepted exactly when allowed; and after non-ASCII text")
    func everyASCIIByte() throws {
        for byte in UInt8(0)..<128 {
            let refused = byte < 0x20 || byte == 0x7F || Array(".#$/[]".utf8).contains(byte)
            let c = String(Character(Unicode.Scalar(byte)))
            for key in [c, "\(c)k", "k\(c)", "ké\(c)ü", "\(c)ascii-only-and-long-enough-to-be-heap"] {
                #expect(Key.isValid(key) == !refused, "byte \(byte) in \(key.debugDescription)")
            }
        }
        // The ASCII flag: an accepted key is its own NFC only when all ASCII.
        #expect(try Key.canonical("abc") == "abc")
        #expect(try Key.canonical("e\u{301}") == "\u{E9}")
    }

    @Test func acceptsOrdinaryKeys() throws {
        for key in ["a", "-", "_", "0", "-1", "Nguyễn Văn An", "박준영", "😀", "a b", "~!@%^&*()", "\u{80}", "\u{2028}"] {
            try Key.validate(key)
        }
        #expect(throws: TreeError.invalidKey("", reason: "key is empty")) { try Key.validate("") }
    }

    @Test func parsesPathSpellings() throws {
        #expect(try Path("/a/b").segments == ["a", "b"])
        #expect(try Path("a/b") == Path("/a/b"))
        #expect(try Path("/a/b/") == Path("/a/b"))
        #expect(try Path("//a///b//") == Path("/a/b"))
        #expect(try Path("/") == Path.root)
        #expect(try Path("") == Path.root)
        #expect(try Path("/").isRoot)
        #expect(try Path(segments: ["x", "y"]).storageKey == "/x/y")
        #expect(throws: TreeError.invalidKey("b.c", reason: "contains forbidden character '.'")) { try Path("/a/b.c") }
        #expect(throws: TreeError.self) { try Path(segments: ["a/b"]) }
        #expect(throws: TreeError.self) { try Path(segments: [""]) }
    }

    @Test func enforcesByteLimit() throws {
        let key768 = String(repeating: "a", count: 768)
        #expect(try Path("/" + key768).byteLength == 768)
        #expect(throws: TreeError.pathTooLong) { try Path("/" + key768 + "a") }
        // Separators count: 383 + "/" + 384 = 768.
        let split = "/" + String(repeating: "b", count: 383) + "/" + String(repeating: "c", count: 384)
        #expect(try Path(split).byteLength == 768)
        #expect(throws: TreeError.pathTooLong) { try Path(split + "c") }
        // Multi-byte characters count by UTF-8 bytes: "é" is 2 bytes.
        #expect(try Path("/" + String(repeating: "é", count: 384)).byteLength == 768)
        #expect(throws: TreeError.pathTooLong) { try Path("/" + String(repeating: "é", count: 384) + "a") }
        #expect(throws: TreeError.pathTooLong) { try Path("/" + String(repeating: "a", count: 767)).appending("b") }
        #expect(throws: TreeError.pathTooLong) {
            try Path("/" + String(repeating: "a", count: 400)).appending(Path("/" + String(repeating: "a", count: 400)))
        }
    }

    @Test func enforcesDepthLimit() throws {
        let keys32 = (0..<32).map { "k\($0)" }
        let deep = try Path(segments: keys32)
        #expect(deep.depth == 32)
        #expect(try Path("/" + keys32.joined(separator: "/")) == deep)
        #expect(throws: TreeError.pathTooDeep) { try Path(segments: keys32 + ["x"]) }
        #expect(throws: TreeError.pathTooDeep) { try Path("/" + (keys32 + ["x"]).joined(separator: "/")) }
        #expect(throws: TreeError.pathTooDeep) { try deep.appending("x") }
        #expect(throws: TreeError.pathTooDeep) { try deep.parent!.appending(Path("/a/b")) }
    }

    @Test func navigatesPaths() throws {
        let path = try Path("/a/b/c")
        #expect(path.parent == (try Path("/a/b")))
        #expect(Path.root.parent == nil)
        #expect(path.key == "c")
        #expect(path.ancestors == [Path.root, try Path("/a"), try Path("/a/b")])
        #expect(Path.root.ancestors.isEmpty)
        #expect(try Path("/a").appending("b") == Path("/a/b"))
        #expect(try Path("/a").appending(Path("b/c")) == path)
        #expect(try Path.root.appending(Path.root) == Path.root)
        #expect(throws: TreeError.self) { try Path("/a").appending("b/c") }
    }

    @Test func comparesAncestry() throws {
        let a = try Path("/a"), ab = try Path("/a/b"), abc = try Path("/a/b/c"), ax = try Path("/ab")
        #expect(a.isAncestor(of: ab))
        #expect(a.isAncestor(of: abc))
        #expect(!ab.isAncestor(of: ab))
        #expect(ab.isAncestorOrSelf(of: ab))
        #expect(!a.isAncestor(of: ax), "segment-wise, not string prefix")
        #expect(!ab.isAncestor(of: a))
        #expect(Path.root.isAncestor(of: a))
        #expect(!Path.root.isAncestor(of: .root))
        #expect(abc.relative(to: a) == (try Path("/b/c")))
        #expect(abc.relative(to: abc) == Path.root)
        #expect(abc.relative(to: .root) == abc)
        #expect(a.relative(to: ab) == nil)
        #expect(ax.relative(to: a) == nil)
    }

    @Test func usesStorageKeysAndDescriptions() throws {
        #expect(Path.root.storageKey == "")
        #expect(Path.root.description == "/")
        let path = try Path("x/ü/😀")
        #expect(path.storageKey == "/x/ü/😀")
        #expect(path.description == "/x/ü/😀")
        #expect(try Path(storageKey: "") == Path.root)
        #expect(try Path(storageKey: path.storageKey) == path)
        for bad in ["/", "a/b", "/a/", "//a", "/a//b"] {
            #expect(throws: TreeError.invalidStorageKey(bad)) { try Path(storageKey: bad) }
        }
        #expect(throws: TreeError.self) { try Path(storageKey: "/a/$") }
    }

    @Test func comparesNFCBytes() throws {
        // Canonically equivalent spellings are one path, held in NFC (Protocol.md §5.1)...
        let composed = try Path("/\u{E9}")
        let decomposed = try Path("/e\u{301}")
        #expect(composed == decomposed)
        #expect(Set([composed, decomposed]).count == 1)
        #expect(Array(decomposed.storageKey.utf8) == [0x2F, 0xC3, 0xA9])
        // ...and paths are ordered by those bytes, as SQLite orders the stored rows.
        #expect(try Path("/a") < Path("/a/b"))
        #expect(try Path("/a-") < Path("/a/b"), "byte order: '-' (0x2D) < '/' (0x2F)")
    }

    @Test func describesErrors() {
        #expect(TreeError.invalidKey("a.b", reason: "contains forbidden character '.'").description
            == #"invalid key "a.b": contains forbidden character '.'"#)
        #expect(TreeError.invalidKey("\u{1}", reason: "x").description == #"invalid key "\u0001": x"#)
        #expect(TreeError.pathTooLong.description == "path is longer than 768 bytes")
        #expect(TreeError.pathTooDeep.description == "path is deeper than 32 levels")
        #expect(TreeError.invalidUpdate("why").description == "invalid update: why")
    }
}
