import Crypto
import Testing
import Tree
@testable import Wire

/// The limits of records at their exact edges, counted as Protocol.md §2 and §3.4 count them.
@Suite("Record limits as the spec counts them")
struct RecordLimitTests {
    /// `levels` arrays of one element, one inside the other, around a 0.
    static func nestedArrays(_ levels: Int) -> [UInt8] { [UInt8](repeating: 0x81, count: levels) + [0x00] }

    /// `levels` maps of one pair {"a": ...}, one inside the other, around a 0.
    static func nestedMaps(_ levels: Int) -> [UInt8] {
        Array(repeatElement([UInt8]([0xA1, 0x61, 0x61]), count: levels).joined()) + [0x00]
    }

    static func accepts(_ bytes: [UInt8], _ limits: CBORLimits) -> Bool {
        (try? CBORDecoder.decode(bytes, limits: limits)) != nil
    }

    /// A signed record whose body is `[[path, value]]`, whatever the value.
    static func record(_ path: String, _ value: CBOR) throws -> [UInt8] {
        let items: [CBOR] = [.unsigned(1), .unsigned(1), .bytes(alice.publicKey.bytes), .unsigned(5), .array([.array([.text(path), value])])]
        let signature = try alice.sign(Record.signingDomain + CBOR.array(items).encoded())
        return CBOR.array(items + [.bytes(signature.bytes)]).encoded()
    }

    @Test("levels: an array or map may stand at level 40 of a record (3 of a session message), scalars below it")
    func levels() throws {
        #expect(Self.accepts(Self.nestedArrays(40), RecordLimits.cbor))
        #expect(!Self.accepts(Self.nestedArrays(41), RecordLimits.cbor))
        #expect(Self.accepts(Self.nestedMaps(40), RecordLimits.cbor))
        #expect(!Self.accepts(Self.nestedMaps(41), RecordLimits.cbor))
        // [4, [[h'']]] has an array at level 3: wrong in kind, but not too deep; one more level is.
        func refusal(_ bytes: [UInt8]) -> String {
            do { _ = try SessionMessage.decode(bytes); return "" } catch { return "\(error)" }
        }
        #expect(try SessionMessage.decode([0x82, 0x04, 0x81, 0x40]) == .records([[]]))
        #expect(refusal([0x82, 0x04, 0x81, 0x81, 0x40]).contains("not a byte string"))
        #expect(refusal([0x82, 0x04, 0x81, 0x81, 0x81, 0x40]).contains("nesting deeper than 3"))
    }

    @Test("items: the outermost item, every element, and every key and value of a map count once")
    func items() {
        func array(_ count: Int) -> [UInt8] {
            [0x9A, UInt8(count >> 24), UInt8(count >> 16 & 0xFF), UInt8(count >> 8 & 0xFF), UInt8(count & 0xFF)]
                + [UInt8](repeating: 0, count: count)
        }
        #expect(Self.accepts(array(199_999), RecordLimits.cbor))  // 1 + 199,999
        #expect(!Self.accepts(array(200_000), RecordLimits.cbor))
        func map(_ pairs: Int) -> [UInt8] {
            var out = [UInt8]()
            CBOR.writeHead(5, UInt64(pairs), &out)
            for key in 0..<pairs {  // integer keys in increasing order are in bytewise order
                CBOR.unsigned(UInt64(key)).encode(into: &out)
                out.append(0)
            }
            return out
        }
        #expect(Self.accepts(map(99_999), RecordLimits.cbor))  // 1 + 2 * 99,999
        #expect(!Self.accepts(map(100_000), RecordLimits.cbor))  // 200,001
    }

    @Test("integers: ±2^53 are values, one beyond is refused; the clock is a u64")
    func integerBounds() throws {
        #expect(Hex.encode(CBOR.unsigned(1 << 53).encoded()) == "1b0020000000000000")
        #expect(Hex.encode(CBOR.negative((1 << 53) - 1).encoded()) == "3b001fffffffffffff")
        #expect(throws: Never.self) { try Record.decode(try Self.record("/n", .unsigned(1 << 53))) }
        #expect(throws: Never.self) { try Record.decode(try Self.record("/n", .negative((1 << 53) - 1))) }
        #expect(throws: RecordError.self) { try Record.decode(try Self.record("/n", .unsigned((1 << 53) + 1))) }
        #expect(throws: RecordError.self) { try Record.decode(try Self.record("/n", .negative(1 << 53))) }
        let late = try write([("/n", 1)], clock: .max)
        #expect(try Record.decode(late.encoded).clock == .max)
    }

    @Test("-0.0 is written as the integer 0 and read back as 0; a float zero is refused")
    func negativeZero() throws {
        #expect(TreeValueCodec.encode(.number(-0.0)) == .unsigned(0))
        let record = try write([("/z", .number(-0.0))])
        guard case let .write(pairs) = try Record.decode(record.encoded).body, case let .number(zero) = pairs[0].value else {
            Issue.record("not a number")
            return
        }
        #expect(zero == 0 && zero.sign == .plus)
        #expect(Hex.encode(CBOR.float(0.0).encoded()) == "f90000" && Hex.encode(CBOR.float(-0.0).encoded()) == "f98000")
        for float in [CBOR.float(0.0), .float(-0.0)] {
            let bytes = try Self.record("/z", float)
            do {
                _ = try Record.decode(bytes)
                Issue.record("a float zero was accepted")
            } catch {
                if case .invalidValue = error {} else { Issue.record("refused for another reason: \(error)") }
            }
        }
    }

    @Test("paths: 768 bytes of keys and the separators between them, no leading slash; 32 keys")
    func paths() throws {
        let k383 = String(repeating: "a", count: 383), k384 = String(repeating: "b", count: 384)
        let longest = try Path(storageKey: "/\(k383)/\(k384)")  // written in 769 bytes
        #expect(longest.byteLength == 768)
        #expect(throws: TreeError.self) { try Path(storageKey: "/\(k384)/\(k384)") }
        #expect(throws: Never.self) { try Path(segments: Array(repeating: "k", count: 32)) }
        #expect(throws: TreeError.self) { try Path(segments: Array(repeating: "k", count: 33)) }
        // A value's keys count as part of its leaf's path: "a" + "/" + 766 bytes is 768.
        let a = try Path("/a")
        #expect(throws: Never.self) { try TreeValueCodec.decode(.map([CBORPair(.text(String(repeating: "c", count: 766)), .unsigned(1))]), at: a) }
        #expect(throws: RecordError.self) { try TreeValueCodec.decode(.map([CBORPair(.text(String(repeating: "c", count: 767)), .unsigned(1))]), at: a) }
    }

    @Test("control characters are the bytes 00-1f and 7f; C1 controls are allowed")
    func controlCharacters() {
        #expect(Key.isValid("a\u{85}b") && Key.isValid("a\u{9F}") && Key.isValid("a\u{200B}"))
        #expect(!Key.isValid("a\u{1F}") && !Key.isValid("a\u{7F}") && !Key.isValid("\u{0}"))
        #expect(throws: Never.self) { try FileEntry.validate(path: "images/a\u{85}.png") }
        #expect(throws: RecordError.self) { try FileEntry.validate(path: "images/a\u{7F}.png") }
        #expect(throws: RecordError.self) { try FileEntry.validate(path: "images/a\u{9}.png") }
    }

    @Test("a media type is 1 to 127 bytes of 21-7e with a slash")
    func mediaTypes() throws {
        func valid(_ type: String) -> Bool {
            let manifest = Manifest(blob: try! Digest32(bytes: [UInt8](repeating: 0, count: 32)), size: 1, contentType: type,
                                    chunkSize: 4096, chunks: [try! Digest32(bytes: [UInt8](repeating: 0, count: 32))])
            return (try? manifest.validate()) != nil
        }
        #expect(valid("image/png") && valid("a/b/c") && valid("/") && valid("x/~!"))
        #expect(valid("a/" + String(repeating: "x", count: 125)))
        #expect(!valid("a/" + String(repeating: "x", count: 126)))
        #expect(!valid("image /png") && !valid("image/p\u{F1}g") && !valid("image\u{7F}/png") && !valid("imagepng") && !valid(""))
    }
}
