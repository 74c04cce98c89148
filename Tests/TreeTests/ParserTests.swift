import Testing
import Tree
import TestSupport

@Suite("JSON parser")
struct ParserTests {
    @Test func parsesEveryKindOfValue() throws {
        #expect(try JSONValue.parse("null") == .null)
        #expect(try JSONValue.parse("true") == .bool(true))
        #expect(try JSONValue.parse("false") == .bool(false))
        #expect(try JSONValue.parse("0") == .number(0))
        #expect(try JSONValue.parse("-12.5e2") == .number(-1250))
        #expect(try JSONValue.parse("1E-2") == .number(0.01))
        #expect(try JSONValue.parse("2e+3") == .number(2000))
        #expect(try JSONValue.parse("1e-400") == .number(0))
        #expect(try JSONValue.parse(#""hi""#) == .string("hi"))
        #expect(try JSONValue.parse("[]") == .array([]))
        #expect(try JSONValue.parse("{}") == .object([:]))
        #expect(try JSONValue.parse(" \t\r\n[1, \"a\", null, {\"k\": [true]}] \n")
            == .array([1, "a", .null, ["k": [true]]]))
        #expect(try JSONValue.parse(#"{"a":{"b":{"c":[]}},"d":-0}"#)
            == .object(["a": ["b": ["c": .array([])]], "d": .number(-0.0)]))
    }

    @Test func decodesEscapes() throws {
        #expect(try JSONValue.parse(#""\"\\\/\b\f\n\r\t""#) == .string("\"\\/\u{08}\u{0C}\n\r\t"))
        #expect(try JSONValue.parse(#""\u0041\u00e9\u4E2D\u0000""#) == .string("Aé中\u{0}"))
        // A surrogate pair combines into one astral scalar.
        #expect(try JSONValue.parse(#""\ud83d\ude00""#) == .string("😀"))
        #expect(try JSONValue.parse(#""x\uD834\uDD1Ey""#) == .string("x𝄞y"))
        // Raw UTF-8 passes through unchanged.
        #expect(try JSONValue.parse("\"Nguyễn Văn An 박준영 😀\"") == .string("Nguyễn Văn An 박준영 😀"))
    }

    @Test func parsesBytesAndTextAlike() throws {
        let text = #"{"k":[1,2,{"z":"ü"}]}"#
        #expect(try JSONValue.parse(Array(text.utf8)) == JSONValue.parse(text))
        #expect(try JSONValue.parse(text.utf8) == JSONValue.parse(text))
    }

    @Test func rejectsTrailingBytes() {
        #expect(parseError("1 2") == .trailingData(offset: 2))
        #expect(parseError("{} x") == .trailingData(offset: 3))
        #expect(parseError("nullx") == .trailingData(offset: 4))
        #expect(parseError("[1]]") == .trailingData(offset: 3))
    }

    @Test func rejectsDuplicateKeys() {
        #expect(parseError(#"{"a":1,"a":2}"#) == .duplicateKey(offset: 7, key: "a"))
        #expect(parseError(#"{"a":{"b":1,"b":1}}"#) == .duplicateKey(offset: 12, key: "b"))
        #expect(parseError(#"{"a":1,"\u0061":2}"#) == .duplicateKey(offset: 7, key: "a"))
    }

    @Test func rejectsBadNumbers() {
        #expect(parseError("01") == .leadingZero(offset: 0))
        #expect(parseError("-01") == .leadingZero(offset: 0))
        #expect(parseError("[1,00]") == .leadingZero(offset: 3))
        #expect(parseError("NaN") == .unexpectedByte(offset: 0, expected: "a value"))
        #expect(parseError("Infinity") == .unexpectedByte(offset: 0, expected: "a value"))
        #expect(parseError("-Infinity") == .unexpectedByte(offset: 1, expected: "a digit"))
        #expect(parseError("1e400") == .numberOutOfRange(offset: 0))
        #expect(parseError("[-1e309]") == .numberOutOfRange(offset: 1))
        #expect(parseError("1.") == .unexpectedEnd(offset: 2, expected: "a digit"))
        #expect(parseError("1.e3") == .unexpectedByte(offset: 2, expected: "a digit"))
        #expect(parseError("1e") == .unexpectedEnd(offset: 2, expected: "a digit"))
        #expect(parseError(".5") == .unexpectedByte(offset: 0, expected: "a value"))
        #expect(parseError("+1") == .unexpectedByte(offset: 0, expected: "a value"))
        #expect(parseError("-") == .unexpectedEnd(offset: 1, expected: "a digit"))
        #expect(parseError("0x10") == .trailingData(offset: 1))
    }

    @Test func rejectsLoneSurrogatesAndBadEscapes() {
        #expect(parseError(#""\ud800""#) == .loneSurrogate(offset: 1))
        #expect(parseError(#""ab\udc00""#) == .loneSurrogate(offset: 3))
        #expect(parseError(#""\ud800\u0041""#) == .loneSurrogate(offset: 1))
        #expect(parseError(#""\ud800x""#) == .loneSurrogate(offset: 1))
        #expect(parseError(#""\x""#) == .invalidEscape(offset: 1))
        #expect(parseError(#""\u12G4""#) == .invalidEscape(offset: 5))
        #expect(parseError(#""\u12"#) == .unexpectedEnd(offset: 5, expected: "a hex digit"))
        #expect(parseError("\"a\u{1}b\"") == .controlCharacterInString(offset: 2))
        #expect(parseError("\"a\nb\"") == .controlCharacterInString(offset: 2))
        #expect(parseError("\"abc") == .unexpectedEnd(offset: 4, expected: "'\"'"))
    }

    @Test func rejectsInvalidUTF8() {
        let quote = UInt8(ascii: "\"")
        let cases: [[UInt8]] = [
            [0xFF],                 // never valid
            [0x80],                 // lone continuation byte
            [0xC0, 0xAF],           // overlong '/'
            [0xE0, 0x80, 0xAF],     // overlong 3-byte
            [0xED, 0xA0, 0x80],     // encoded surrogate U+D800
            [0xF4, 0x90, 0x80, 0x80], // above U+10FFFF
            [0xE2, 0x82],           // truncated
            [0xC3, 0x28],           // bad continuation
        ]
        for bad in cases {
            #expect(parseError([quote, UInt8(ascii: "a")] + bad + [quote]) == .invalidUTF8(offset: 2), "bytes \(bad)")
        }
        // Outside strings non-ASCII is simply an unexpected byte.
        #expect(parseError([0xEF, 0xBB, 0xBF, UInt8(ascii: "1")]) == .unexpectedByte(offset: 0, expected: "a value"))
        // Well-formed 2-, 3- and 4-byte sequences pass.
        #expect(parseError([quote, 0xC3, 0xA9, 0xE2, 0x82, 0xAC, 0xF0, 0x9F, 0x98, 0x80, quote]) == nil)
    }

    @Test func enforcesDepthLimit() {
        let limit = JSONLimits.default.maxDepth
        #expect(limit == 64)
        let ok = String(repeating: "[", count: limit) + String(repeating: "]", count: limit)
        #expect(parseError(ok) == nil)
        let tooDeep = String(repeating: "[", count: limit + 1) + String(repeating: "]", count: limit + 1)
        #expect(parseError(tooDeep) == .tooDeep(offset: limit, limit: limit))
        let objects = String(repeating: #"{"a":"#, count: 5) + "1" + String(repeating: "}", count: 5)
        #expect(parseError(objects, limits: JSONLimits(maxDepth: 4)) == .tooDeep(offset: 20, limit: 4))
        #expect(parseError(objects, limits: JSONLimits(maxDepth: 5)) == nil)
        // Absurd nesting fails cleanly instead of overflowing the stack.
        #expect(parseError(String(repeating: "[", count: 200_000)) == .tooDeep(offset: limit, limit: limit))
    }

    @Test func enforcesSizeLimits() {
        #expect(JSONLimits.default.maxBytes == 16 * 1024 * 1024)
        let small = JSONLimits(maxBytes: 10, maxDepth: 8, maxStringBytes: 4)
        #expect(parseError("[1,2,3,4,5]", limits: small) == .inputTooLarge(byteCount: 11, limit: 10))
        #expect(parseError("[1,2,3,45]", limits: small) == nil)
        #expect(parseError(#""abcd""#, limits: small) == nil)
        #expect(parseError(#""abcde""#, limits: small) == .stringTooLong(offset: 0, limit: 4))
        #expect(parseError(#"{"abcde":1}"#, limits: small) == .inputTooLarge(byteCount: 11, limit: 10))
        #expect(parseError(#"["\u00e9\u00e9x"]"#, limits: JSONLimits(maxStringBytes: 4)) == .stringTooLong(offset: 1, limit: 4))
    }

    @Test func reportsStructuralErrorsWithOffsets() throws {
        let error = try #require(parseError(#"{"a":1 "b":2}"#))
        #expect(error == .unexpectedByte(offset: 7, expected: "',' or '}'"))
        #expect(error.offset == 7)
        #expect(error.description == "invalid JSON at byte 7: expected ',' or '}'")
        #expect(parseError("") == .unexpectedEnd(offset: 0, expected: "a value"))
        #expect(parseError("   ") == .unexpectedEnd(offset: 3, expected: "a value"))
        #expect(parseError("[1,]") == .unexpectedByte(offset: 3, expected: "a value"))
        #expect(parseError(#"{"a":1,}"#) == .unexpectedByte(offset: 7, expected: "a string key"))
        #expect(parseError("{a:1}") == .unexpectedByte(offset: 1, expected: "a string key"))
        #expect(parseError(#"{"a" 1}"#) == .unexpectedByte(offset: 5, expected: "':'"))
        #expect(parseError("[1 2]") == .unexpectedByte(offset: 3, expected: "',' or ']'"))
        #expect(parseError("[1") == .unexpectedEnd(offset: 2, expected: "',' or ']'"))
        #expect(parseError("tru") == .unexpectedEnd(offset: 3, expected: "'true'"))
        #expect(parseError("nul1") == .unexpectedByte(offset: 3, expected: "'null'"))
        #expect(parseError("'a'") == .unexpectedByte(offset: 0, expected: "a value"))
        #expect(JSONError.duplicateKey(offset: 7, key: "a").description == "invalid JSON at byte 7: duplicate key \"a\"")
    }

    @Test func roundTripsRandomTreeValues() throws {
        var factory = ValueFactory(rng: SplitMix64(seed: 0x7EE5))
        for _ in 0..<500 {
            let value = factory.treeValue()
            #expect(try value.normalized() == value, "generator must produce tree values")
            let text = value.serialized()
            #expect(try JSONValue.parse(text).normalized() == value, "\(text)")
            #expect(try JSONValue.parse(value.serializedPretty()).normalized() == value)
        }
    }

    @Test func roundTripsRandomRawValuesExactly() throws {
        var factory = ValueFactory(rng: SplitMix64(seed: 42))
        for _ in 0..<500 {
            let value = factory.rawValue()
            let text = value.serialized()
            #expect(try JSONValue.parse(text) == value, "\(text)")
            #expect(try JSONValue.parse(value.serializedPretty()) == value)
        }
    }

    @Test func neverCrashesOnMutatedInput() {
        var factory = ValueFactory(rng: SplitMix64(seed: 7))
        var rng = SplitMix64(seed: 99)
        let interesting: [UInt8] = Array("{}[]\",:\\u0-+.eE1 tfn".utf8) + [0x00, 0x80, 0xC3, 0xED, 0xF4, 0xFF]
        var rejected = 0
        for _ in 0..<2000 {
            var bytes = Array(factory.treeValue().serialized().utf8)
            for _ in 0..<Int.random(in: 1...3, using: &rng) where !bytes.isEmpty {
                let position = Int.random(in: 0..<bytes.count, using: &rng)
                switch Int.random(in: 0...2, using: &rng) {
                case 0: bytes[position] = interesting.randomElement(using: &rng) ?? 0
                case 1: bytes.remove(at: position)
                default: bytes.insert(interesting.randomElement(using: &rng) ?? 0, at: position)
                }
            }
            if parseError(bytes) != nil { rejected += 1 }
        }
        #expect(rejected > 500)
    }
}
