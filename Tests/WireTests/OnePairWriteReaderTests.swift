import Crypto
import Testing
import Tree
@testable import Wire

/// The direct reader of one-pair writes (`OnePairWriteReader`) against the general decoder
/// (`RecordCodec.decodeItems`): whatever it accepts, the general decoder accepts as the same
/// record, byte for byte; what the general decoder refuses, it never accepts.
@Suite("Reading one-pair writes directly")
struct OnePairWriteReaderTests {
    /// A record of exactly these fields, signed (the decoders do not check signatures, so any
    /// 64 bytes would do; a real one keeps the records realistic).
    static func encoded(_ fields: [CBOR]) -> [UInt8] {
        let signature = (try? alice.sign(Record.signingDomain + CBOR.array(fields).encoded()))?.bytes ?? []
        return CBOR.array(fields + [.bytes(signature)]).encoded()
    }

    static func write(_ path: String, _ value: CBOR, clock: UInt64 = 1_700_000_000_000 << 16) -> [UInt8] {
        encoded([.unsigned(1), .unsigned(1), .bytes(alice.publicKey.bytes), .unsigned(clock), .array([.array([.text(path), value])])])
    }

    /// The reader's answer checked against the general decoder's; returns whether it read the
    /// record itself.
    @discardableResult
    static func check(_ bytes: [UInt8], sourceLocation: SourceLocation = #_sourceLocation) -> Bool {
        let direct = OnePairWriteReader.record(bytes, id: nil)
        let general: Record? = try? RecordCodec.decodeItems(bytes, id: nil)
        checkHeld(bytes, direct: direct, sourceLocation: sourceLocation)
        guard let direct else { return false }
        guard let general else {
            Issue.record("read directly, but the general decoder refuses \(bytes)", sourceLocation: sourceLocation)
            return true
        }
        #expect(direct.author == general.author && direct.clock == general.clock && direct.signature == general.signature,
                sourceLocation: sourceLocation)
        #expect(direct.encoded == general.encoded && direct.id == general.id && direct.valuesRespelled == general.valuesRespelled,
                sourceLocation: sourceLocation)
        // Bytes, not `==`: Swift's string equality would take canonically equivalent text as equal.
        #expect(RecordCodec.encodeBody(direct.body).encoded() == RecordCodec.encodeBody(general.body).encoded(),
                sourceLocation: sourceLocation)
        return true
    }

    /// The reader holding messages in their bytes agrees with it building them: the same
    /// records, each held value's bytes its canonical encoding, each member as built.
    static func checkHeld(_ bytes: [UInt8], direct: Record?, sourceLocation: SourceLocation) {
        let held = OnePairWriteReader.record(bytes, id: nil, holdingMessages: true)
        #expect((held == nil) == (direct == nil), "one way reads it, the other not: \(bytes)", sourceLocation: sourceLocation)
        guard let held, let direct, case let .write(heldPairs) = held.body, case let .write(pairs) = direct.body else { return }
        #expect(held == direct && held.valuesRespelled == direct.valuesRespelled, sourceLocation: sourceLocation)
        #expect(held.pairValueEncodings == direct.pairValueEncodings, sourceLocation: sourceLocation)
        for (heldPair, pair) in zip(heldPairs, pairs) {
            #expect(heldPair.isNull == (pair.value == .null), sourceLocation: sourceLocation)
            guard let encoding = heldPair.heldEncoding else { continue }
            // Held only at a message's root, only an object, and exactly as it would be encoded.
            #expect(Zone.isRoot(pair.path.segments) && pair.path.segments.count == 4, sourceLocation: sourceLocation)
            #expect(Array(encoding) == TreeValueCodec.encode(pair.value).encoded(), sourceLocation: sourceLocation)
            guard case let .object(members) = pair.value else {
                Issue.record("a held value that is no object", sourceLocation: sourceLocation)
                continue
            }
            for (key, member) in members { #expect(heldPair.member(key) == member, sourceLocation: sourceLocation) }
            for key in keys + ["photoURL", "zz"] where members[key] == nil {
                #expect(heldPair.member(key) == nil, sourceLocation: sourceLocation)
            }
        }
    }

    @Test("a message, a profile field and a delete are read directly, as the general decoder reads them")
    func commonRecords() {
        let message = CBOR.map([
            CBORPair(.text("date"), .unsigned(1_700_000_000_123)), CBORPair(.text("senderId"), .text(alice.publicKey.userID)),
            CBORPair(.text("text"), .text("Привет, 世界 👋")), CBORPair(.text("read"), .bool(false)),
            CBORPair(.text("n"), .negative(41)), CBORPair(.text("meta"), .map([CBORPair(.text("e\u{301}"), .bool(true))])),
        ])
        #expect(Self.check(Self.write("/conversations/c1/messages/-Nabcdefghijklmnopqr", message)))
        #expect(Self.check(Self.write("/users/\(alice.publicKey.userID)/name", .text("Alice"))))
        #expect(Self.check(Self.write("/rooms/lobby", .null)))
        #expect(Self.check(Self.write("/k/cafe\u{301}", .unsigned(1 << 53))))
        // Respelled: an object key in NFD is read in NFC, and the record says so.
        let respelled = Self.write("/k", .map([CBORPair(.text("cafe\u{301}"), .unsigned(1))]))
        #expect(Self.check(respelled))
        #expect(OnePairWriteReader.record(respelled, id: nil)?.valuesRespelled == true)
    }

    @Test("what it does not read is left to the general decoder, which still reads it")
    func leftToTheGeneralDecoder() throws {
        let withFloat = Self.write("/k", .float(1.5))
        let twoPairs = Self.encoded([.unsigned(1), .unsigned(1), .bytes(alice.publicKey.bytes), .unsigned(5),
                                     .array([.array([.text("/a"), .unsigned(1)]), .array([.text("/b"), .unsigned(2)])])])
        for bytes in [withFloat, twoPairs] {
            #expect(OnePairWriteReader.record(bytes, id: nil) == nil)
            #expect(try Record.decode(bytes).encoded == bytes)
        }
    }

    @Test("bytes the general decoder refuses are never read directly")
    func refusals() {
        let valid = Self.write("/k", .map([CBORPair(.text("a"), .unsigned(1)), CBORPair(.text("b"), .unsigned(2))]))
        var cases: [[UInt8]] = []
        // A wider head than needed for the record's array.
        cases.append([0x98, 0x06] + valid.dropFirst())
        // Map keys out of order, and the same key twice.
        let mapStart = valid.firstIndex(of: 0xA2)!
        var swapped = valid
        swapped[mapStart + 2] = UInt8(ascii: "b")
        swapped[mapStart + 5] = UInt8(ascii: "a")
        cases.append(swapped)
        var twice = valid
        twice[mapStart + 5] = UInt8(ascii: "a")
        cases.append(twice)
        // A map head claiming more members than the bytes left could hold.
        var claiming = valid
        claiming.replaceSubrange(mapStart...mapStart, with: [0xBA, 0x00, 0x07, 0xA1, 0x20])
        cases.append(claiming)
        // Trailing bytes, a truncation, a null member, an empty object, arrays and byte strings.
        cases.append(valid + [0x00])
        cases.append(Array(valid.dropLast()))
        cases.append(Self.write("/k", .map([CBORPair(.text("a"), .null)])))
        cases.append(Self.write("/k", .map([])))
        cases.append(Self.write("/k", .array([.unsigned(1)])))
        cases.append(Self.write("/k", .bytes([1, 2])))
        // Integers beyond 2^53, canonically equivalent keys, bad keys and paths.
        cases.append(Self.write("/k", .unsigned(1 << 53 + 1)))
        cases.append(Self.write("/k", .negative(1 << 53)))
        cases.append(Self.write("/k", .map([CBORPair(.text("\u{E9}"), .unsigned(1)), CBORPair(.text("e\u{301}"), .unsigned(2))])))
        cases.append(Self.write("/k", .map([CBORPair(.text("a.b"), .unsigned(1))])))
        cases.append(Self.write("/k", .map([CBORPair(.text("\u{1}"), .unsigned(1))])))
        cases.append(Self.write("/k", .map([CBORPair(.text("a["), .unsigned(1))])))
        cases.append(Self.write("/k", .map([CBORPair(.text("\u{7F}"), .unsigned(1))])))
        cases.append(Self.write("/k", .map([CBORPair(.text(""), .unsigned(1))])))
        // A member key one byte past the path limit: "k/" and 767 bytes make 769.
        cases.append(Self.write("/k", .map([CBORPair(.text(String(repeating: "y", count: 767)), .unsigned(1))])))
        cases.append(Self.write("/k/\u{E9}", .map([CBORPair(.text(String(repeating: "y", count: 765)), .unsigned(1))])))
        cases.append(Self.write("k", .unsigned(1)))
        cases.append(Self.write("/a//b", .unsigned(1)))
        cases.append(Self.write("/" + String(repeating: "x", count: 800), .unsigned(1)))
        // Another version, wrong sizes of author and signature, a record of five fields.
        cases.append(Self.encoded([.unsigned(2), .unsigned(1), .bytes(alice.publicKey.bytes), .unsigned(5), .array([.array([.text("/a"), .unsigned(1)])])]))
        cases.append(Self.encoded([.unsigned(1), .unsigned(1), .bytes([1, 2, 3]), .unsigned(5), .array([.array([.text("/a"), .unsigned(1)])])]))
        cases.append(CBOR.array([.unsigned(1), .unsigned(1), .bytes(alice.publicKey.bytes), .unsigned(5), .array([.array([.text("/a"), .unsigned(1)])]), .bytes([0])]).encoded())
        cases.append(CBOR.array([.unsigned(1), .unsigned(1), .bytes(alice.publicKey.bytes), .unsigned(5), .array([.array([.text("/a"), .unsigned(1)])])]).encoded())
        // Nesting past the limits: 40 levels of CBOR (the record, its body and pair take three),
        // and before that 32 keys of a path.
        var deep = CBOR.unsigned(1)
        for _ in 0..<38 { deep = .map([CBORPair(.text("d"), deep)]) }
        cases.append(Self.write("/k", deep))
        // The same breaches in a message, whose value a reader about to store holds in its bytes:
        // keys out of order or twice, text that is not UTF-8, a null member, an empty object.
        let message = "/conversations/c1/messages/-Nabc"
        let inMessage = Self.write(message, .map([CBORPair(.text("a"), .text("x")), CBORPair(.text("b"), .unsigned(2))]))
        let messageMap = inMessage.firstIndex(of: 0xA2)!
        for (offset, byte) in [(2, UInt8(ascii: "b")), (6, UInt8(ascii: "a")), (4, 0xFF)] {
            var broken = inMessage
            broken[messageMap + offset] = byte
            if offset == 2 { broken[messageMap + 6] = UInt8(ascii: "a") }
            cases.append(broken)
        }
        cases.append(Self.write(message, .map([CBORPair(.text("a"), .null)])))
        cases.append(Self.write(message, .map([CBORPair(.text("a"), .map([]))])))
        cases.append(Self.write(message, .map([])))
        for bytes in cases {
            #expect((try? RecordCodec.decodeItems(bytes, id: nil)) == nil, "the general decoder takes \(bytes)")
            #expect(OnePairWriteReader.record(bytes, id: nil) == nil, "read directly: \(bytes)")
            #expect(OnePairWriteReader.record(bytes, id: nil, holdingMessages: true) == nil, "read directly, held: \(bytes)")
        }
        // A message is held in its bytes when read to be stored, and built when read otherwise.
        let held = OnePairWriteReader.record(inMessage, id: nil, holdingMessages: true)
        #expect(held.flatMap { record in if case let .write(pairs) = record.body { pairs[0].heldEncoding } else { nil } } != nil)
        #expect(held?.body == OnePairWriteReader.record(inMessage, id: nil)?.body)
        // A member key that brings its path to the limit exactly (768 bytes) is read directly.
        #expect(Self.check(Self.write("/k", .map([CBORPair(.text(String(repeating: "y", count: 766)), .unsigned(1))]))))
        // A value as deep as a path may reach is read directly.
        var within = CBOR.unsigned(1)
        for _ in 0..<31 { within = .map([CBORPair(.text("d"), within)]) }
        #expect(Self.check(Self.write("/k", within)))
    }

    @Test("generated and mutated records: the direct reader agrees with the general decoder on every one")
    func generatedAndMutated() {
        var random = SplitMix(seed: 0x5EED_0001)
        let (readDirectly, mutantsRead) = Self.generatedAndMutated(&random, { random, _ in
            Self.write(Self.paths[random.below(Self.paths.count)], Self.value(&random, depth: 0))
        }, read: { Self.check($0) })
        // The generator mostly makes records the reader reads, and some mutants still are records.
        #expect(readDirectly > 1_000)
        #expect(mutantsRead > 50)
    }

    /// 4,000 rounds of `make` (given the round), each input checked by `read`, then a mutant of
    /// it, and now and then a prefix of it: how many inputs and mutants `read` read.
    static func generatedAndMutated(_ random: inout SplitMix, _ make: (inout SplitMix, Int) -> [UInt8],
                                    read: ([UInt8]) -> Bool) -> (valid: Int, mutants: Int) {
        var readDirectly = 0, mutantsRead = 0
        for round in 0..<4_000 {
            let valid = make(&random, round)
            if read(valid) { readDirectly += 1 }
            var mutant = valid
            for _ in 0...random.below(3) { mutate(&mutant, &random) }
            if read(mutant) { mutantsRead += 1 }
            if round % 500 == 0 { _ = read(Array(valid.prefix(random.below(valid.count)))) }
        }
        return (readDirectly, mutantsRead)
    }

    // MARK: Write bodies (a sealed write's plaintext)

    /// A write body of one pair: what a sealed write's plaintext holds.
    static func body(_ path: String, _ value: CBOR) -> [UInt8] {
        CBOR.array([.array([.text(path), value])]).encoded()
    }

    /// The direct reading of a write body checked against the general one; returns whether it
    /// read the body itself.
    @discardableResult
    static func checkBody(_ bytes: [UInt8], sourceLocation: SourceLocation = #_sourceLocation) -> Bool {
        guard let (pair, valueBytes) = OnePairWriteReader.writeBody(bytes) else { return false }
        guard let general = try? PrivateBodies.decodeWriteItems(bytes), general.pairs.count == 1 else {
            Issue.record("read directly, but the general way refuses \(bytes)", sourceLocation: sourceLocation)
            return true
        }
        let expected = general.pairs[0]
        // Bytes, not `==`: Swift's string equality would take canonically equivalent text as equal.
        #expect(RecordCodec.encodeBody(.write([pair])).encoded() == RecordCodec.encodeBody(.write([expected])).encoded(),
                sourceLocation: sourceLocation)
        #expect(valueBytes == general.valueBytes[0], sourceLocation: sourceLocation)
        #expect(Array(valueBytes) == TreeValueCodec.encode(expected.value).encoded(), sourceLocation: sourceLocation)
        if let held = pair.heldEncoding {
            // Held only at a message's root, and then the very bytes given for the zones' store.
            #expect(Zone.isRoot(pair.path.segments) && pair.path.segments.count == 4, sourceLocation: sourceLocation)
            #expect(held == valueBytes, sourceLocation: sourceLocation)
            if case let .object(members) = expected.value {
                for (key, member) in members { #expect(pair.member(key) == member, sourceLocation: sourceLocation) }
            }
        }
        return true
    }

    @Test("a sealed write's plaintext of one pair is read directly, as the general way reads it; the rest is left to it")
    func writeBodies() throws {
        let message = CBOR.map([CBORPair(.text("date"), .unsigned(1_700_000_000_123)), CBORPair(.text("senderId"), .text(alice.publicKey.userID)),
                                CBORPair(.text("text"), .text("Xin chào 👋"))])
        let messageBody = Self.body("/conversations/g1/messages/-Nabcdefghijklmnopqr", message)
        #expect(Self.checkBody(messageBody))
        #expect(OnePairWriteReader.writeBody(messageBody)?.pair.heldEncoding != nil)
        #expect(Self.checkBody(Self.body("/conversations/g1/typing", .bool(true))))
        #expect(OnePairWriteReader.writeBody(Self.body("/conversations/g1/typing", .bool(true)))?.pair.heldEncoding == nil)
        #expect(Self.checkBody(Self.body("/conversations/g1/messages/m", .null)))
        // Left to the general way: a key it would respell (its bytes are then no canonical
        // encoding), a float, two pairs, a record rather than a body.
        let respelled = Self.body("/conversations/g1/messages/m", .map([CBORPair(.text("cafe\u{301}"), .unsigned(1))]))
        let twoPairs = CBOR.array([.array([.text("/a"), .unsigned(1)]), .array([.text("/b"), .unsigned(2)])]).encoded()
        for bytes in [respelled, Self.body("/k", .float(1.5)), twoPairs, Self.write("/k", .unsigned(1))] {
            #expect(OnePairWriteReader.writeBody(bytes) == nil)
        }
        let general = try PrivateBodies.decodeWriteAndValueBytes(respelled)
        #expect(Array(general.valueBytes[0]) == TreeValueCodec.encode(general.pairs[0].value).encoded())
    }

    @Test("generated and mutated write bodies: the direct reader agrees with the general way on every one")
    func generatedAndMutatedBodies() {
        var random = SplitMix(seed: 0x5EED_0002)
        var held = 0
        let (readDirectly, mutantsRead) = Self.generatedAndMutated(&random, { random, round in
            // Every other round a message: an object at a message's path.
            var value = Self.value(&random, depth: 0)
            while round % 2 == 0, !Self.isMap(value) { value = Self.value(&random, depth: 0) }
            let body = Self.body(Self.paths[random.below(round % 2 == 0 ? 3 : Self.paths.count)], value)
            if OnePairWriteReader.writeBody(body)?.pair.heldEncoding != nil { held += 1 }
            return body
        }, read: { Self.checkBody($0) })
        #expect(readDirectly > 1_000)
        #expect(held > 50)
        #expect(mutantsRead > 50)
    }

    static func isMap(_ item: CBOR) -> Bool {
        if case .map = item { return true }
        return false
    }

    static let paths = ["/conversations/c1/messages/-Nabc", "/conversations/c1/messages/-Nabd", "/conversations/c2/messages/m", "/users/u1", "/users/u1/name", "/k/e\u{301}", "", "/a", "/a.b", "/x/\u{1}", "/\u{212B}"]
    static let keys = ["a", "b", "text", "senderId", "date", "e\u{301}", "\u{E9}", "\u{212B}", "\u{C5}", "a.b", "$x", "", "\u{7F}", "\u{E000}", "Ж", "😀"]

    /// A random value, mostly a valid tree value, sometimes not (floats, arrays, bytes, nulls
    /// inside objects, keys that are invalid or meet in NFC).
    static func value(_ random: inout SplitMix, depth: Int) -> CBOR {
        switch random.below(depth > 3 ? 8 : 11) {
        case 0: return .unsigned([0, 23, 24, 255, 256, 65_535, 65_536, 1 << 32, 1 << 53, 1 << 53 + 1][random.below(10)])
        case 1: return .negative([0, 23, 24, 255, 1 << 53 - 1, 1 << 53][random.below(6)])
        case 2, 3: return .text(["", "hi", "Привет", "e\u{301}", "😀 ok", String(repeating: "z", count: 300)][random.below(6)])
        case 4: return .bool(random.below(2) == 0)
        case 5: return random.below(4) == 0 ? .null : .text("n")
        case 6: return [.float(1.5), .float(2.0), .array([.unsigned(1)]), .bytes([1])][random.below(4)]
        case 7: return .unsigned(7)
        default:
            var pairs: [CBORPair] = []
            var used = Set<[UInt8]>()
            for _ in 0..<random.below(5) {
                let key = keys[random.below(keys.count)]
                guard used.insert(Array(key.utf8)).inserted else { continue }
                pairs.append(CBORPair(.text(key), value(&random, depth: depth + 1)))
            }
            return .map(pairs)
        }
    }

    /// One random change of the bytes: a byte replaced (at random, or by a head byte that
    /// often changes the meaning), inserted or removed.
    static func mutate(_ bytes: inout [UInt8], _ random: inout SplitMix) {
        guard !bytes.isEmpty else { return }
        let at = random.below(bytes.count)
        let interesting: [UInt8] = [0x00, 0x17, 0x18, 0x19, 0x1A, 0x1B, 0x1F, 0x20, 0x38, 0x40, 0x60, 0x61, 0x7F, 0x80, 0xA0, 0xA1, 0xBF, 0xF4, 0xF6, 0xF7, 0xF9, 0xFF]
        switch random.below(4) {
        case 0: bytes[at] = UInt8(truncatingIfNeeded: random.next())
        case 1: bytes[at] = interesting[random.below(interesting.count)]
        case 2: bytes.insert(interesting[random.below(interesting.count)], at: at)
        default: bytes.remove(at: at)
        }
    }
}

/// A small seeded generator, so a failure repeats.
struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    mutating func below(_ n: Int) -> Int { Int(next() % UInt64(n)) }
}
