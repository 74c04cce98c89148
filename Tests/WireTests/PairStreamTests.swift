import Testing
import TestSupport
import Tree
@testable import Wire

/// The pairs of a large write's content read as a stream (`PairStreamReader`) are checked
/// exactly as a whole-pair decode checked them (kept here as `WholePairReference`): the same
/// contents accepted with the same pairs, the same refused with the same kind of error.
@Suite("Large write pairs read as a stream")
struct PairStreamTests {
    /// The kind of an error, or the pairs read (with whether any was respelled).
    enum Outcome: Equatable, CustomStringConvertible {
        case pairs([WritePair], respelled: [Bool])
        case refused(String)

        var description: String {
            switch self {
            case let .pairs(pairs, _): return "\(pairs.count) pairs"
            case let .refused(kind): return "refused: \(kind)"
            }
        }
    }

    static func kind(_ error: Error) -> String {
        guard let error = error as? RecordError else { return "other: \(error)" }
        switch error {
        case .malformed: return "malformed"
        case .invalidBody: return "invalid body"
        case .invalidPath: return "invalid path"
        case .invalidValue: return "invalid value"
        default: return "\(error)"
        }
    }

    static func streamed(_ content: [UInt8], pieces: Int = 1 << 20) -> Outcome {
        do {
            var offset = 0
            let source = { () -> LargeWriteContentSource in
                offset = 0
                return LargeWriteContentSource(size: content.count) {
                    guard offset < content.count else { return nil }
                    defer { offset = min(content.count, offset + pieces) }
                    return content[offset..<min(content.count, offset + pieces)]
                }
            }
            try LargeWriteContent.validate(reading: source())
            var pairs = [WritePair]()
            var respelled = [Bool]()
            var builder = ContentValueBuilder()
            var path = Path.root
            try LargeWriteContent.read(source()) { event in
                switch event {
                case let .pair(at):
                    path = at
                    builder = ContentValueBuilder()
                case let .pairEnd(wasRespelled):
                    pairs.append(WritePair(path: path, value: builder.value ?? .null))
                    respelled.append(wasRespelled)
                default:
                    builder.add(event)
                }
            }
            return .pairs(pairs, respelled: respelled)
        } catch {
            return .refused(kind(error))
        }
    }

    static func reference(_ content: [UInt8]) -> Outcome {
        do {
            let (pairs, respelled) = try WholePairReference.read(content)
            return .pairs(pairs, respelled: respelled)
        } catch {
            return .refused(kind(error))
        }
    }

    // MARK: - Random contents

    /// Keys in several spellings: ASCII, precomposed, decomposed (not NFC), Hangul, emoji, the
    /// singletons whose NFC is ASCII (U+212A), and now and then an invalid one.
    static let keyParts = ["a", "b", "k", "K", "name", "0", "7", "10", "é", "e\u{301}", "ệ", "e\u{323}\u{302}", "한",
                           "\u{1112}\u{1161}\u{11AB}", "😀", "\u{212A}", "Å", "A\u{30A}", "\u{212B}", "x y", ";", "`", "\u{37E}"]

    static func randomKey(_ random: inout SplitMix64, valid: Bool = true) -> String {
        if !valid, random.chance(0.02) { return ["a.b", "", "a/b", "$x", "\u{1}"][Int(random.next() % 5)] }
        var key = ""
        for _ in 0..<Int(1 + random.next() % 3) { key += keyParts[Int(random.next() % UInt64(keyParts.count))] }
        return key
    }

    static func randomNumber(_ random: inout SplitMix64) -> CBOR {
        switch random.next() % 7 {
        case 0: return .unsigned(random.next() % 100)
        case 1: return .unsigned(random.next() % (1 << 53))
        case 2: return .negative(random.next() % (1 << 53))
        case 3: return .float(Double(random.next() % 1000) + 0.5)
        case 4: return .float(-1e300 * Double(1 + random.next() % 9))
        case 5: return .float(Double(Float(1.0) / Float(3.0)))
        default: return .float(Double(random.next() % 1_000_000) / 7.0 + 0.001)
        }
    }

    /// A random value as CBOR, canonical in its bytes (keys sorted, distinct as bytes), whose
    /// keys may be equivalent in NFC now and then (`randomKey`).
    static func randomValue(_ random: inout SplitMix64, depth: Int) -> CBOR {
        switch random.next() % (depth > 3 ? 4 : 7) {
        case 0: return randomNumber(&random)
        case 1: return .bool(random.chance(0.5))
        case 2: return .text(["", "hi", "héllo", "e\u{301}", "안녕하세요", String(repeating: "z", count: 300)][Int(random.next() % 6)])
        case 3: return .text("s\(random.next() % 1000)")
        default:
            var members = [[UInt8]: CBORPair]()
            for _ in 0..<Int(1 + random.next() % (random.chance(0.1) ? 40 : 5)) {
                let key = randomKey(&random)
                members[CBOR.text(key).encoded()] = CBORPair(.text(key), randomValue(&random, depth: depth + 1))
            }
            return .map(members.sorted { $0.key.lexicographicallyPrecedes($1.key) }.map(\.value))
        }
    }

    static let paths = ["/a", "/a/b", "/b", "/c/\u{e9}", "/c/e\u{301}x", "/users/u1", "/users/u1/name", "/conversations/c1",
                        "/conversations/c1/messages/m1", "/conversations/c1/messages/m1/text", "/d/\u{212A}", "/d/K1", "/e", "/f/g/h", ""]

    /// A random content: its pairs' paths sorted as written (distinct), some of them ancestors
    /// of others or equal in NFC now and then.
    static func randomContent(_ random: inout SplitMix64) -> [UInt8] {
        var chosen = [String: CBOR]()
        for _ in 0..<Int(1 + random.next() % 6) {
            var path = paths[Int(random.next() % UInt64(paths.count))]
            if random.chance(0.5) { path += "/" + randomKey(&random) + "\(random.next() % 50)" }
            chosen[path] = random.chance(0.05) ? .null : randomValue(&random, depth: path.split(separator: "/").count)
        }
        if random.chance(0.1) {
            for i in 0..<Int(50 + random.next() % 200) { chosen["/many/\(i)"] = randomValue(&random, depth: 2) }
        }
        let sorted = chosen.sorted { Array($0.key.utf8).lexicographicallyPrecedes(Array($1.key.utf8)) }
        return CBOR.array(sorted.map { .array([.text($0.key), $0.value]) }).encoded()
    }

    // MARK: - Tests

    @Test("random contents (unicode keys in and out of NFC, numbers, nesting, zone paths, many pairs) are read by the stream exactly as decoded whole",
          arguments: 0..<8)
    func randomContentsAgree(seed: UInt64) throws {
        var random = SplitMix64(seed: 0x5EED_0000 + seed)
        var accepted = 0, refusals = [String: Int]()
        for _ in 0..<300 {
            let content = Self.randomContent(&random)
            let expected = Self.reference(content)
            #expect(Self.streamed(content) == expected)
            #expect(Self.streamed(content, pieces: Int(1 + random.next() % 97)) == expected)
            switch expected {
            case .pairs: accepted += 1
            case let .refused(kind): refusals[kind, default: 0] += 1
            }
        }
        // Both sides of the comparison are exercised.
        #expect(accepted > 50)
        #expect(refusals["invalid value", default: 0] > 0)
    }

    @Test("random changes of valid contents (bytes flipped, set, inserted, deleted, cut) are refused or accepted as a whole decode does, with the same kind of error",
          arguments: 0..<8)
    func mutationsAgree(seed: UInt64) throws {
        var random = SplitMix64(seed: 0xB17E_0000 + seed)
        var kinds = [String: Int]()
        var checked = 0
        while checked < 400 {
            var content = Self.randomContent(&random)
            guard case .pairs = Self.reference(content) else { continue }
            for _ in 0..<Int(1 + random.next() % 3) {
                let at = Int(random.next() % UInt64(content.count))
                switch random.next() % 6 {
                case 0: content[at] ^= UInt8(1 << (random.next() % 8))
                case 1: content[at] = UInt8(truncatingIfNeeded: random.next())
                case 2: content.insert(UInt8(truncatingIfNeeded: random.next()), at: at)
                case 3: if content.count > 1 { content.remove(at: at) }
                case 4: content = Array(content[..<max(1, at)])
                default: content.swapAt(at, Int(random.next() % UInt64(content.count)))
                }
            }
            let expected = Self.reference(content)
            #expect(Self.streamed(content) == expected, "content \(content.map { String($0, radix: 16) })")
            #expect(Self.streamed(content, pieces: Int(1 + random.next() % 13)) == expected)
            switch expected {
            case .pairs: kinds["accepted", default: 0] += 1
            case let .refused(kind): kinds[kind, default: 0] += 1
            }
            checked += 1
        }
        #expect(kinds["malformed", default: 0] > 0)
        #expect(kinds["invalid value", default: 0] + kinds["invalid body", default: 0] + kinds["invalid path", default: 0] > 0)
    }

    @Test("a key not in NFC is taken in NFC, and the pair says it was respelled; two keys equal in NFC are an invalid value")
    func respelledKeys() throws {
        let decomposed = CBOR.array([.array([.text("/a"), .map([CBORPair(.text("e\u{301}"), .unsigned(1))])])]).encoded()
        #expect(Self.streamed(decomposed) == .pairs([WritePair(path: try Path("/a"), value: .object(["\u{e9}": 1]))], respelled: [true]))
        #expect(Self.reference(decomposed) == Self.streamed(decomposed))
        let keys = [CBOR.text("\u{e9}"), .text("e\u{301}")].sorted { $0.encoded().lexicographicallyPrecedes($1.encoded()) }
        let twins = CBOR.array([.array([.text("/a"), .map(keys.map { CBORPair($0, .unsigned(1)) })])]).encoded()
        #expect(Self.streamed(twins) == .refused("invalid value"))
        #expect(Self.reference(twins) == .refused("invalid value"))
    }

    // MARK: - The stream's own limits (Protocol.md §3.7)

    /// A content of one pair at `path` whose value is an object of `keys`, each set to 1.
    static func onePair(_ path: String, keys: [String]) -> [UInt8] {
        let members = keys.map { CBORPair(.text($0), .unsigned(1)) }.sorted { $0.key.encoded().lexicographicallyPrecedes($1.key.encoded()) }
        return CBOR.array([.array([.text(path), .map(members)])]).encoded()
    }

    @Test("keys remembered for NFC: 4 MiB of non-ASCII keys in one object are read, one key more is an invalid value")
    func rememberedKeys() throws {
        // Each key is 48 bytes ("é" and 46 digits): it costs 48 + 16 = 64, so 65,536 of them
        // are exactly 4 MiB.
        let key = { (i: Int) in "\u{e9}" + String(repeating: "0", count: 46 - String(i).count) + String(i) }
        #expect(65_536 * (48 + KeyMemory.entryCost) == LargeWrite.maxRememberedKeyBytes)
        let atLimit = Self.onePair("/a", keys: (0..<65_536).map(key))
        #expect(throws: Never.self) { try LargeWriteContent.validate(atLimit[...]) }
        let past = Self.onePair("/a", keys: (0..<65_537).map(key))
        #expect { try LargeWriteContent.validate(past[...]) } throws: { Self.kind($0) == "invalid value" }
        // ASCII keys of a large object are not remembered: any number of them is read.
        let ascii = Self.onePair("/a", keys: (0..<100_000).map { "k\($0)" })
        #expect(throws: Never.self) { try LargeWriteContent.validate(ascii[...]) }
    }

    @Test("a key whose NFC is ASCII but which is not ASCII is taken in an object of 4,096 keys and refused in one of 4,097")
    func asciiTwinsInLargeObjects() throws {
        let small = Self.onePair("/a", keys: ["\u{212A}x"] + (1..<4_096).map { "k\($0)" })
        #expect(throws: Never.self) { try LargeWriteContent.validate(small[...]) }
        let twins = Self.onePair("/a", keys: ["\u{212A}x", "Kx"] + (2..<4_096).map { "k\($0)" })
        #expect { try LargeWriteContent.validate(twins[...]) } throws: { Self.kind($0) == "invalid value" }
        let large = Self.onePair("/a", keys: ["\u{212A}x"] + (1..<4_097).map { "k\($0)" })
        #expect { try LargeWriteContent.validate(large[...]) } throws: { Self.kind($0) == "invalid value" }
    }

    @Test("only U+212A, U+037E and U+1FEF are scalars beyond ASCII whose NFC is ASCII")
    func singletonsToASCII() {
        var found = [UInt32]()
        for value in UInt32(0x80)...0x10FFFF {
            guard let scalar = Unicode.Scalar(value) else { continue }
            if CanonicalText.isASCII(CanonicalText.nfc(String(Character(scalar)))) { found.append(value) }
        }
        #expect(found == [0x37E, 0x1FEF, 0x212A])
    }

    @Test("items: a pair in a zone holds at most 1,048,576 (malformed past it); a pair in the open zone has no such limit")
    func zonePairItems() throws {
        // A pair's items: its array, its path, the map and two per member.
        let atLimit = Self.onePair("/users/u1", keys: (0..<524_286).map { "k\($0)" })
        #expect(throws: Never.self) { try LargeWriteContent.validate(atLimit[...]) }
        let past = Self.onePair("/users/u1", keys: (0..<524_287).map { "k\($0)" })
        #expect { try LargeWriteContent.validate(past[...]) } throws: { Self.kind($0) == "malformed" }
        let open = Self.onePair("/open", keys: (0..<524_287).map { "k\($0)" })
        #expect(throws: Never.self) { try LargeWriteContent.validate(open[...]) }
    }
}

/// How a content's pairs were read before they were read as a stream: each pair decoded whole
/// (a CBOR tree, then a value), the reference the stream must agree with.
enum WholePairReference {
    static func read(_ content: [UInt8]) throws -> ([WritePair], [Bool]) {
        let bytes = content[...]
        let head: (count: UInt64, length: Int)
        do { head = try CBORDecoder.arrayHead(bytes) } catch { throw RecordError.malformed(error) }
        guard head.count >= 1 else { throw RecordError.invalidBody("no pair") }
        guard head.count <= UInt64(LargeWrite.maxPairs) else { throw RecordError.invalidBody("too many pairs") }
        if head.count > UInt64(max(0, content.count - head.length)) / 3 { throw RecordError.malformed(.truncated(offset: content.count)) }
        var offset = head.length
        var previous: String?
        var pairs = [WritePair](), respelledPairs = [Bool]()
        for _ in 0..<head.count {
            let decoded: (item: CBOR, length: Int)
            do {
                decoded = try CBORDecoder.decodePrefix(bytes[offset...], limits: LargeWrite.pairLimits)
            } catch {
                throw RecordError.malformed(error)
            }
            offset += decoded.length
            guard case let .array(pair) = decoded.item, pair.count == 2, case let .text(pathText) = pair[0] else {
                throw RecordError.invalidBody("a pair is an array of a text path and a value")
            }
            if let previous, !previous.utf8.lexicographicallyPrecedes(pathText.utf8) { throw RecordError.invalidBody("order") }
            previous = pathText
            let path: Path
            do { path = try Path(storageKey: pathText) } catch { throw RecordError.invalidPath("\(error)") }
            var respelled = false
            let value = try TreeValueCodec.decode(pair[1], at: path, respelled: &respelled)
            pairs.append(WritePair(path: path, value: value))
            respelledPairs.append(respelled)
        }
        guard offset == content.count else { throw RecordError.malformed(.trailingBytes(offset: offset)) }
        try RecordCodec.checkDisjoint(pairs.map(\.path))
        return (pairs, respelledPairs)
    }
}
