import Testing
import Tree

/// "é" as one scalar and as "e" and a combining acute: canonically equivalent spellings.
let composed = "caf\u{E9}"
let decomposed = "cafe\u{301}"

func utf8(_ text: String) -> [UInt8] { Array(text.utf8) }

/// Keys are compared, stored and shown in NFC (Protocol.md §5.1): one key per spelling.
@Suite("Canonical keys")
struct CanonicalKeyTests {
    @Test("NFC with an ASCII fast path")
    func nfc() {
        #expect(utf8(CanonicalText.nfc(decomposed)) == utf8(composed))
        #expect(utf8(CanonicalText.nfc(composed)) == utf8(composed))
        #expect(CanonicalText.nfc("plain-ASCII_key 01") == "plain-ASCII_key 01")
        #expect(CanonicalText.isASCII("abc") && !CanonicalText.isASCII(composed))
        #expect(CanonicalText.isNFC(composed) && !CanonicalText.isNFC(decomposed) && CanonicalText.isNFC("abc"))
        // Hangul: conjoining jamo compose into the syllable; Vietnamese: two marks on one letter.
        #expect(utf8(CanonicalText.nfc("\u{1107}\u{1161}\u{11A8}")) == utf8("\u{BC15}"))
        #expect(utf8(CanonicalText.nfc("Nguye\u{302}\u{303}n")) == utf8("Nguy\u{1EC5}n"))
        // Marks in another order are put in canonical order (dot below before circumflex).
        #expect(utf8(CanonicalText.nfc("e\u{302}\u{323}")) == utf8(CanonicalText.nfc("e\u{323}\u{302}")))
        // Singletons: KELVIN SIGN is "K".
        #expect(CanonicalText.nfc("\u{212A}") == "K" && utf8(CanonicalText.nfc("\u{212A}")) == [0x4B])
    }

    @Test("a path built from either spelling holds the NFC bytes and is one path")
    func paths() throws {
        let nfc = try Path("/k/\(composed)")
        let nfd = try Path("/k/\(decomposed)")
        #expect(nfc == nfd && nfc.hashValue == nfd.hashValue)
        #expect(utf8(nfd.storageKey) == utf8("/k/\(composed)"))
        #expect(nfd.segments.map(utf8) == [utf8("k"), utf8(composed)])
        #expect(try Path(storageKey: "/k/\(decomposed)") == nfc)
        #expect(utf8(try Path(storageKey: "/k/\(decomposed)").storageKey) == utf8("/k/\(composed)"))
        #expect(try Path(segments: ["k", decomposed]) == nfc)
        #expect(utf8(try Path("/k").appending(decomposed).key!) == utf8(composed))
        #expect(try Path("/k/\(decomposed)/x").relative(to: nfc) == Path("/x"))
        #expect(nfc.isAncestor(of: try Path("/k/\(decomposed)/x")))
        #expect(try Key.canonical(decomposed).utf8.elementsEqual(composed.utf8))
        #expect(throws: TreeError.self) { try Key.canonical("a.\u{301}") }
    }

    @Test("the path limits apply to the NFC form")
    func limits() throws {
        // 384 "é" written decomposed are 1152 bytes, 768 in NFC.
        let long = try Path("/" + String(repeating: "e\u{301}", count: 384))
        #expect(long.byteLength == 768)
        // U+0958 is excluded from composition: NFC writes it as two scalars, 3 bytes growing to 6.
        #expect(CanonicalText.nfc("\u{958}").utf8.count == 6)
        #expect(throws: TreeError.pathTooLong) { try Path("/" + String(repeating: "\u{958}", count: 200)) }
        #expect(throws: TreeError.pathTooLong) { try Path("/a").appending(String(repeating: "\u{958}", count: 128)) }
    }

    @Test("object keys of a written value are taken in NFC; two spellings in one JSON object are a duplicate")
    func values() throws {
        let value = try JSONValue.object([decomposed: .number(1), "x": .object(["e\u{301}": .bool(true)])]).normalized()
        guard case let .object(members) = value, case let .object(inner)? = members["x"] else {
            Issue.record("not an object: \(value)")
            return
        }
        #expect(members.keys.map(utf8).sorted { $0.lexicographicallyPrecedes($1) } == [utf8(composed), utf8("x")])
        #expect(inner.keys.map(utf8) == [utf8("\u{E9}")])
        #expect(value.serialized().utf8.elementsEqual("{\"\(composed)\":1,\"x\":{\"\u{E9}\":true}}".utf8))
        #expect(throws: JSONError.self) { try JSONValue.parse("{\"\(composed)\": 1, \"\(decomposed)\": 2}") }
        // Values built by hand are put in NFC by `withCanonicalKeys`.
        let byHand = JSONValue.object([decomposed: .object(["e\u{301}": .number(2)])]).withCanonicalKeys()
        guard case let .object(outer) = byHand else { Issue.record("not an object"); return }
        #expect(outer.keys.map(utf8) == [utf8(composed)])
    }

    @Test("an update whose keys meet in NFC is refused like one whose keys meet as written")
    func updates() throws {
        let body: JSONValue = ["k/\(composed)": 1, "k/\(decomposed)/x": 2]
        #expect(throws: TreeError.self) { try UpdateBatch.validateUpdate(at: .root, body) }
        let pairs = try UpdateBatch.validateUpdate(at: .root, ["\(decomposed)/a": 1, "b": 2])
        #expect(pairs.map { utf8($0.0.storageKey) } == [utf8("/b"), utf8("/\(composed)/a")])
    }

    @Test("a $key query's bounds match keys in either spelling")
    func queryBounds() throws {
        let tree = try JSONValue.object([composed: 1, "cafe": 2, "cafz": 3]).normalized()
        for bound in [composed, decomposed] {
            let json = JSONValue.string(bound).serialized()
            let equal = try #require(try FirebaseQuery.parse([("orderBy", "\"$key\""), ("equalTo", json)]))
            #expect(equal.apply(to: tree) == .object([composed: 1]))
            let from = try #require(try FirebaseQuery.parse([("orderBy", "\"$key\""), ("startAt", json)]))
            // By UTF-16 code unit "cafz" < "caf\u{E9}" (while "cafe\u{301}" would sort below "cafz").
            #expect(from.apply(to: tree) == .object([composed: 1]))
            let to = try #require(try FirebaseQuery.parse([("orderBy", "\"$key\""), ("endAt", json)]))
            #expect(to.apply(to: tree) == .object([composed: 1, "cafe": 2, "cafz": 3]))
            // Built directly, with the bound as given.
            #expect(FirebaseQuery(order: .key, equalTo: .string(bound)).apply(to: tree) == .object([composed: 1]))
        }
        // orderBy a child path spelled either way.
        let rows = try JSONValue.object(["a": [composed: 2], "b": [composed: 1]]).normalized()
        let byChild = try #require(try FirebaseQuery.parse([("orderBy", JSONValue.string(decomposed).serialized()), ("limitToFirst", "1")]))
        #expect(byChild.apply(to: rows) == .object(["b": [composed: 1]]))
    }
}
