import Testing
import Tree
import TestSupport

/// The streaming reader (`JSONStreamReader`, for REST bodies read from a file) accepts and
/// refuses exactly what `JSONValue.parse` does, with the same errors, whatever the pieces the
/// input comes in; only repeated keys are left to its consumer.
@Suite("JSON stream reader")
struct JSONStreamReaderTests {
    /// The value the events of `text` make, read in pieces of `piece` bytes, or the error.
    static func read(_ text: [UInt8], piece: Int, limits: JSONLimits = .default) -> Result<JSONValue, JSONError> {
        var offset = 0
        var reader = JSONStreamReader(limits: limits) {
            guard offset < text.count else { return nil }
            defer { offset += piece }
            return text[offset..<min(text.count, offset + piece)]
        }
        var builder = JSONValueBuilder()
        var result: JSONValue?
        do {
            while let event = try reader.next() {
                if let value = builder.take(event) { result = value }
            }
        } catch let error as JSONError {
            return .failure(error)
        } catch {
            Issue.record("unexpected \(error)")
        }
        return result.map { .success($0) } ?? .failure(.unexpectedEnd(offset: -1, expected: "nothing"))
    }

    static func parsed(_ text: [UInt8], limits: JSONLimits = .default) -> Result<JSONValue, JSONError> {
        do { return .success(try JSONValue.parse(text, limits: limits)) } catch { return .failure(error) }
    }

    static let inputs: [String] = [
        "   ",
        " \t\r\n[1, \"a\", null, {\"k\": [true]}] \n",
        "",
        "'a'",
        "+1",
        "-",
        "-01",
        "-12.5e2",
        "-Infinity",
        ".5",
        "0",
        "01",
        "0x10",
        "1 2",
        "1.",
        "1.e3",
        "1E-2",
        "1e",
        "1e-400",
        "1e400",
        "2e+3",
        "Infinity",
        "NaN",
        "[-1e309]",
        "[1 2]",
        "[1",
        "[1,00]",
        "[1,2,3,4,5]",
        "[1,2,3,45]",
        "[1,]",
        "[1]]",
        "[]",
        "\"Nguyễn Văn An 박준영 😀\"",
        "\"a\nb\"",
        "\"a\u{1}b\"",
        "\"abc",
        "false",
        "nul1",
        "null",
        "nullx",
        "tru",
        "true",
        "{a:1}",
        "{} x",
        "{}",
        #""\"\\\/\b\f\n\r\t""#,
        #""\u0041\u00e9\u4E2D\u0000""#,
        #""\u12"#,
        #""\u12G4""#,
        #""\ud800""#,
        #""\ud800\u0041""#,
        #""\ud800x""#,
        #""\ud83d\ude00""#,
        #""\x""#,
        #""ab\udc00""#,
        #""abcd""#,
        #""abcde""#,
        #""hi""#,
        #""x\uD834\uDD1Ey""#,
        #"["\u00e9\u00e9x"]"#,
        #"{"a" 1}"#,
        #"{"a":1 "b":2}"#,
        #"{"a":1,"\u0061":2}"#,
        #"{"a":1,"a":2}"#,
        #"{"a":1,}"#,
        #"{"a":{"b":1,"b":1}}"#,
        #"{"a":{"b":{"c":[]}},"d":-0}"#,
        #"{"abcde":1}"#,
        "", "   ", "nul", "[1,]", "{\"a\" 1}", "{\"a\":}", "[1 2]", "-", "1.", "1e", "1e+", "\"\u{1}\"", "[\"\\u00e9\", 1.5e-7, -0.0, 1E400]",
        "{\"k\":[1,2,{\"z\":\"\u{00FC}\"}], \"e\u{301}\": null}", "\"\u{1F600}\"", "[true, false, null]  \n\t", "{} {}",
    ]

    @Test("every input reads as JSONValue.parse reads it, in pieces of any size", arguments: [1, 2, 3, 7, 64, 1 << 16])
    func sameAsParse(piece: Int) {
        for text in Self.inputs where !text.contains("\"a\":1,\"a\"") && !text.contains("\"b\":1,\"b\"") && !text.contains("\\u0061") {
            let bytes = Array(text.utf8)
            #expect(Self.read(bytes, piece: piece) == Self.parsed(bytes), "\(text)")
        }
        // Invalid UTF-8 cut anywhere.
        for bytes: [UInt8] in [[0x22, 0xC3, 0x22], [0x22, 0xE0, 0x80, 0x80, 0x22], [0x22, 0xF4, 0x90, 0x80, 0x80, 0x22], [0x22, 0xC3]] {
            #expect(Self.read(bytes, piece: piece) == Self.parsed(bytes))
        }
    }

    @Test("nesting, string and document limits are the parser's")
    func limits() {
        let limit = JSONLimits.default.maxDepth
        for depth in [limit, limit + 1] {
            let text = Array((String(repeating: "[", count: depth) + String(repeating: "]", count: depth)).utf8)
            #expect(Self.read(text, piece: 5) == Self.parsed(text))
        }
        let small = JSONLimits(maxBytes: 10, maxDepth: 3, maxStringBytes: 4)
        // The parser refuses a document too large before reading it; the reader once it has read that far.
        guard case .failure(.inputTooLarge) = Self.read(Array("[1,2,3,4,5]".utf8), piece: 3, limits: small) else {
            Issue.record("a document over the limit was read")
            return
        }
        for text in ["[1,2,3,45]", #""abcd""#, #""abcde""#, "[[[[1]]]]", "[[[1]]]"] {
            #expect(Self.read(Array(text.utf8), piece: 3, limits: small) == Self.parsed(Array(text.utf8), limits: small), "\(text)")
        }
    }

    @Test("a repeated key is the consumer's to see: its events are all handed out")
    func repeatedKeys() {
        #expect(Self.read(Array(#"{"a":1,"a":2}"#.utf8), piece: 4) == .success(.object(["a": 2])))
    }
}
