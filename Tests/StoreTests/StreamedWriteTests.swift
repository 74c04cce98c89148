import Crypto
import Foundation
import Testing
import Tree
import Wire
@testable import Store
import TestSupport

/// Writes read from a body as a stream (`Store.streamedWrite`, the REST writes of more than
/// 16 MiB): the content they sign must be the one the in-memory writes make of the same body,
/// byte for byte, and a body they refuse must be refused alike, with nothing stored.
@Suite("Streamed writes")
struct StreamedWriteTests {
    let alice = testAuthors[0]
    let bob = testAuthors[1]
    let now: UInt64 = 1_700_000_000_000

    /// A scratch directory, removed by the caller.
    func scratch() throws -> String {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("lanchat-streamed-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        return directory
    }

    /// `text` in pieces of random sizes (1 to 40 bytes), as a spool file is read in pieces.
    func source(_ text: [UInt8], seed: UInt64) -> () throws -> ArraySlice<UInt8>? {
        var rng = SplitMix64(seed: seed)
        var offset = 0
        return {
            guard offset < text.count else { return nil }
            let length = min(text.count - offset, Int(rng.next() % 40) + 1)
            defer { offset += length }
            return text[offset..<offset + length]
        }
    }

    /// What the in-memory writes would sign for `body`: the content of their pairs after every
    /// check `Store.write` makes, or the error they throw.
    func inMemory(_ store: Store, _ kind: StreamedWriteKind, at path: Path, body: [UInt8], author: PrivateKey) -> Outcome {
        do {
            let raw = try JSONValue.parse(body)
            if kind == .update, raw.objectMembers == nil { return .failure("not an object") }
            if kind == .update, case let .object(members) = raw, members.count > LargeWrite.maxPairs { return .failure("too many") }
            let pairs = try store.plannedPairs(kind, at: path, raw: raw, author: author.publicKey, nowMillis: now)
            for pair in pairs { try store.checkPermission(pair, author: author.publicKey) }
            try LargeWriteContent.check(pairs)
            return .success(LargeWriteContent.encode(pairs))
        } catch {
            return .failure(Self.describe(error))
        }
    }

    func streamed(_ store: Store, _ kind: StreamedWriteKind, at path: Path, body: [UInt8], author: PrivateKey, seed: UInt64,
                  directory: String) -> Outcome {
        do {
            return .success(try store.streamedContent(kind, at: path, scratchDirectory: directory, source: source(body, seed: seed),
                                                      author: author.publicKey, nowMillis: now))
        } catch StreamedWriteError.notAnObject {
            return .failure("not an object")
        } catch {
            return .failure(Self.describe(error))
        }
    }

    /// Errors as the REST handler tells them apart: every JSON error is one answer.
    static func describe(_ error: any Error) -> String {
        if error is JSONError { return "invalid JSON" }
        let text = String(describing: error)
        // Which of two keys naming one path is named depends on a dictionary's order.
        if text.hasSuffix("names the same path as another key") { return "two keys name one path" }
        return text
    }

    /// A store where `alice` has a profile, a message of her own and numbers to increment.
    func seeded() throws -> (Store, messageKey: String) {
        let store = try memoryStore()
        let key = MessageKey.bind("-OAbCdEfGhIjKlMnOpQr", to: alice.publicKey.userID)
        try store.set(try Path("/users/\(alice.publicKey.userID)"), to: .object(["name": "Alice"]), signer: alice, nowMillis: now)
        try store.set(try Path("/conversations/c9/messages/\(key)"),
                      to: .object(["senderId": .string(alice.publicKey.userID), "text": "hi"]), signer: alice, nowMillis: now)
        try store.set(try Path("/counters"), to: .object(["a": 5, "b": 1.5]), signer: alice, nowMillis: now)
        return (store, key)
    }

    @Test("random bodies give the in-memory content byte for byte: set and update, zones, server values, arrays, NFC, numbers",
          arguments: 0..<60)
    func sameContent(seed: UInt64) throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (store, _) = try seeded()
        var generator = BodyGenerator(seed: seed, uid: alice.publicKey.userID)
        for round in 0..<6 {
            let (kind, path, body) = generator.write()
            let expected = inMemory(store, kind, at: path, body: body, author: alice)
            let got = streamed(store, kind, at: path, body: body, author: alice, seed: seed &* 31 &+ UInt64(round), directory: directory)
            #expect(got == expected, "\(kind) \(path): \(String(decoding: body, as: UTF8.self))")
            if case .success = expected { #expect(try contentIsValid(got)) }
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).isEmpty)
    }

    func contentIsValid(_ content: Outcome) throws -> Bool {
        guard case let .success(bytes) = content else { return false }
        try LargeWriteContent.validate(bytes[...])
        return true
    }

    @Test("bad bodies are refused as the in-memory writes refuse them", arguments: [
        (StreamedWriteKind.set, "/a", #"{"a": 1,}"#),
        (.set, "/a", #"{"a": [1, 2}"#),
        (.set, "/a", #"{"a": 1} x"#),
        (.set, "/a", #"{"a": 1, "a": 2}"#),
        (.set, "/a", #"{"é": 1, "e\u0301": 2}"#),
        (.set, "/a", String(repeating: "[", count: 65) + String(repeating: "]", count: 65)),
        (.set, "/a", #"{"a.b": 1}"#),
        (.set, "/a", #"{"x": {"a$": null}}"#),
        (.set, "/a", #"{"x": {".sv": "yesterday"}}"#),
        (.set, "/a", #"{"x": {".sv": "timestamp", "y": 1}}"#),
        (.set, "/a", #"{"x": {"y": 1, ".sv": "timestamp"}}"#),
        (.set, "/a", #"{"x": {".sv": {"increment": "one"}}}"#),
        (.set, "/a", #"{"x": 1e400}"#),
        (.set, "/a", #"{"x": 01}"#),
        (.set, "/users/OTHER", #"{"name": "Mallory"}"#),
        (.set, "/users", #"{"OTHER": {"name": "Mallory"}}"#),
        (.set, "/conversations/c1/messages/m1", #"{"senderId": "OTHER", "text": "x"}"#),
        (.update, "/a", #"[1, 2]"#),
        (.update, "/a", #"{}"#),
        (.update, "/a", #"{"b": 1, "b/c": 2}"#),
        (.update, "/a", #"{"b/c": 1, "b//c": 2}"#),
        (.update, "/a", #"{"users": {"ME": 1}, "users/ME": 2}"#),
        (.update, "/a", #"{"b": 1, "b": 2}"#),
        (.update, "/a", #"{"b.c": 1}"#),
        (.update, "/", #"{"users/OTHER/name": "x"}"#),
    ])
    func sameRefusals(kind: StreamedWriteKind, path: String, text: String) throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (store, _) = try seeded()
        let body = Array(text.replacingOccurrences(of: "ME", with: alice.publicKey.userID)
            .replacingOccurrences(of: "OTHER", with: bob.publicKey.userID).utf8)
        let before = try store.value(at: .root)
        let expected = inMemory(store, kind, at: try Path(path), body: body, author: alice)
        guard case .failure = expected else {
            Issue.record("the in-memory write took \(text)")
            return
        }
        #expect(streamed(store, kind, at: try Path(path), body: body, author: alice, seed: 7, directory: directory) == expected)
        // The write itself: refused alike, nothing stored, no file left.
        #expect(throws: (any Error).self) {
            try store.streamedWrite(kind, at: try Path(path), scratchDirectory: directory, source: source(body, seed: 3),
                                    signer: alice, nowMillis: now)
        }
        #expect(try store.value(at: .root) == before)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).isEmpty)
    }

    @Test("a streamed update of 5,000 children is a large write, folded, its value the in-memory one")
    func largeUpdate() throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (store, key) = try seeded()
        let other = try memoryStore()
        var text = "{"
        var expected = [String: JSONValue]()
        for i in 0..<5_000 {
            let name = String(format: "k%05d", i)
            text += (i == 0 ? "" : ",") + "\"\(name)\": {\"n\": \(i), \"s\": \"\(String(repeating: "y", count: 50))\", \"t\": {\".sv\": \"timestamp\"}}"
            expected[name] = .object(["n": .number(Double(i)), "s": .string(String(repeating: "y", count: 50)), "t": .number(Double(now))])
        }
        text += "}"
        let body = Array(text.utf8)
        let planned = try store.plannedPairs(.update, at: try Path("/big"), raw: try JSONValue.parse(body), author: alice.publicKey, nowMillis: now)
        let (record, pushKey) = try store.streamedWrite(.update, at: try Path("/big"), scratchDirectory: directory,
                                                        source: source(body, seed: 1), signer: alice, nowMillis: now)
        #expect(pushKey == nil)
        guard case let .largeWrite(write) = record.body else {
            Issue.record("not a large write")
            return
        }
        #expect(try store.value(at: try Path("/big")) == .object(expected))
        // The content is the in-memory one, read back from the chunks.
        var content = [UInt8]()
        for hash in write.chunks { content += try #require(try store.chunk(hash)) }
        #expect(content == LargeWriteContent.encode(planned))
        // Another store folds it from the record and the chunks alike.
        _ = try other.ingest([record], nowMillis: now)
        _ = try other.importLargeWriteChunks(write.chunks.map { try! store.chunk($0)![...] })
        #expect(try other.value(at: try Path("/big")) == .object(expected))
        #expect(try store.value(at: try Path("/conversations/c9/messages/\(key)/text")) == "hi")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).isEmpty)
    }

    @Test("a push names a new child; a streamed body small enough for a record is written as one")
    func pushAndSmall() throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (store, _) = try seeded()
        let body = Array((String(repeating: " ", count: 4096) + #"{"text": "hello", "senderId": "ME"}"#)
            .replacingOccurrences(of: "ME", with: alice.publicKey.userID).utf8)
        let (record, key) = try store.streamedWrite(.push, at: try Path("/conversations/c2/messages"), scratchDirectory: directory,
                                                    source: source(body, seed: 2), signer: alice, nowMillis: now)
        let name = try #require(key)
        #expect(MessageKey.isBound(name, to: alice.publicKey.userID))
        #expect(record.kind == .write)
        #expect(try store.value(at: try Path("/conversations/c2/messages/\(name)/text")) == "hello")
    }
}

/// A content, or how a write was refused.
enum Outcome: Equatable {
    case success([UInt8])
    case failure(String)
}

extension JSONValue {
    var objectMembers: [String: JSONValue]? {
        if case let .object(members) = self { return members }
        return nil
    }
}

/// Random REST writes as JSON text: keys in and out of NFC, unicode and escapes, numbers of
/// every form, arrays with holes, server values, and bodies that reach into zones.
struct BodyGenerator {
    var rng: SplitMix64
    let uid: String

    init(seed: UInt64, uid: String) {
        rng = SplitMix64(seed: seed)
        self.uid = uid
    }

    mutating func pick<T>(_ items: [T]) -> T { items[Int(rng.next() % UInt64(items.count))] }

    /// (NFC key, how it may be spelled)
    static let keys: [(String, [String])] = [
        ("a", ["a"]), ("b", ["b"]), ("z", ["z"]), ("0", ["0"]), ("1", ["1"]), ("10", ["10"]), ("2", ["2"]),
        ("é", ["é", "e\u{301}", "\\u00e9", "e\\u0301"]), ("Å", ["Å", "A\u{30A}", "\u{212B}"]), ("日本", ["日本", "\\u65e5\\u672c"]),
        ("key with space", ["key with space"]), ("ü-long-key-name", ["ü-long-key-name", "u\u{308}-long-key-name"]),
        ("counters", ["counters"]), ("text", ["text"]),
    ]

    mutating func ws() -> String { pick(["", "", " ", "\n", "\t ", "\r\n  "]) }

    mutating func number() -> String {
        pick(["0", "-0", "1", "-1", "42", "1.5", "-2.25", "0.1", "1e3", "1E-3", "2.5e+2", "9007199254740992", "9007199254740993",
              "-9007199254740992", "1e300", "123456789.125", "3.0", "65504", "65505", "0.000001"])
    }

    mutating func string() -> String {
        pick(["\"\"", "\"plain\"", "\"caf\\u00e9\"", "\"e\u{301}\"", "\"tab\\tquote\\\"\"", "\"\\ud83d\\ude00\"", "\"😀日本\"",
              "\"slash\\/\"", "\"\(String(repeating: "x", count: 30))\""])
    }

    mutating func value(depth: Int) -> String {
        let roll = rng.next() % 100
        if depth > 3 || roll < 40 {
            switch rng.next() % 7 {
            case 0: return "null"
            case 1: return pick(["true", "false"])
            case 2, 3: return number()
            case 4: return pick([#"{".sv": "timestamp"}"#, #"{".sv": {"increment": 2}}"#, #"{ ".sv" : { "increment" : -1.5 } }"#])
            default: return string()
            }
        }
        if roll < 55 {
            let count = Int(rng.next() % 4)
            return "[" + ws() + (0..<count).map { _ in value(depth: depth + 1) }.joined(separator: "," + ws()) + ws() + "]"
        }
        return object(depth: depth)
    }

    mutating func object(depth: Int) -> String {
        var available = Self.keys.shuffled(using: &rng)
        let count = Int(rng.next() % 5)
        var members = [String]()
        for _ in 0..<count {
            let (_, spellings) = available.removeLast()
            members.append("\"\(pick(spellings))\"" + ws() + ":" + ws() + value(depth: depth + 1))
        }
        return "{" + ws() + members.joined(separator: "," + ws()) + ws() + "}"
    }

    /// A body that carries zones: the author's profile, messages (their own), open data.
    mutating func zoned() -> (Path, String) {
        switch rng.next() % 4 {
        case 0:
            return (try! Path("/conversations/c1"), #"{"title": "T", "messages": {"m\#(rng.next() % 3)": {"senderId": "\#(uid)", "text": \#(value(depth: 3))}}}"#)
        case 1:
            return (try! Path("/users"), #"{"\#(uid)": {"name": \#(string()), "n": \#(number())}}"#)
        case 2:
            return (.root, #"{"open": \#(object(depth: 1)), "users": {"\#(uid)": \#(value(depth: 2))}}"#)
        default:
            return (try! Path("/conversations"), #"{"c9": {"messages": null, "title": "x"}}"#)
        }
    }

    mutating func write() -> (StreamedWriteKind, Path, [UInt8]) {
        switch rng.next() % 5 {
        case 0:
            let (path, body) = zoned()
            return (.set, path, Array(body.utf8))
        case 1, 2:
            let path = pick([try! Path("/data"), try! Path("/data/x/y"), try! Path("/counters")])
            return (.set, path, Array((ws() + value(depth: 0) + ws()).utf8))
        default:
            let path = pick([Path.root, try! Path("/data"), try! Path("/counters")])
            let count = Int(rng.next() % 4) + 1
            var members = [String]()
            var used = Set<String>()
            for _ in 0..<count {
                let key = pick(["a", "b/c", "b/d", "é", "e\u{301}/x", "counters/a", "users/\(uid)/name", "z/\(pick(["1", "2"]))"])
                guard used.insert(CanonicalText.nfc(key)).inserted else { continue }
                members.append("\"\(key)\":" + ws() + value(depth: 1))
            }
            return (.update, path, Array(("{" + members.joined(separator: ",") + "}").utf8))
        }
    }
}
