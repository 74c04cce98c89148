import Crypto
import Testing
@testable import Wire
import TestSupport

@Suite("Deterministic CBOR")
struct CBORTests {
    /// RFC 8949 Appendix A examples that fall inside lanchat's subset.
    static let examples: [(CBOR, String)] = [
        (.unsigned(0), "00"), (.unsigned(23), "17"), (.unsigned(24), "1818"), (.unsigned(100), "1864"),
        (.unsigned(1000), "1903e8"), (.unsigned(1_000_000), "1a000f4240"), (.unsigned(1_000_000_000_000), "1b000000e8d4a51000"),
        (.unsigned(UInt64.max), "1bffffffffffffffff"), (.negative(0), "20"), (.negative(9), "29"), (.negative(99), "3863"),
        (.negative(999), "3903e7"), (.float(1.5), "f93e00"), (.float(100000.0), "fa47c35000"), (.float(1.1), "fb3ff199999999999a"),
        (.float(65504.0), "f97bff"), (.float(5.960464477539063e-8), "f90001"), (.float(0.00006103515625), "f90400"),
        (.float(-4.0), "f9c400"), (.float(3.4028234663852886e+38), "fa7f7fffff"), (.float(1.0e+300), "fb7e37e43c8800759c"),
        (.bool(false), "f4"), (.bool(true), "f5"), (.null, "f6"), (.text(""), "60"), (.text("a"), "6161"),
        (.text("IETF"), "6449455446"), (.text("ü"), "62c3bc"), (.text("水"), "63e6b0b4"), (.bytes([1, 2, 3, 4]), "4401020304"),
        (.array([]), "80"), (.array([.unsigned(1), .unsigned(2), .unsigned(3)]), "83010203"), (.map([]), "a0"),
        (.map([CBORPair(.unsigned(1), .unsigned(2)), CBORPair(.unsigned(3), .unsigned(4))]), "a201020304"),
        (.map([CBORPair(.text("a"), .unsigned(1)), CBORPair(.text("b"), .array([.unsigned(2), .unsigned(3)]))]), "a26161016162820203"),
    ]

    @Test("RFC 8949 examples encode and decode exactly", arguments: 0..<examples.count)
    func rfcExamples(index: Int) throws {
        let (item, hex) = Self.examples[index]
        #expect(Hex.encode(item.encoded()) == hex)
        #expect(try CBORDecoder.decode(Hex.decode(hex)!) == item)
    }

    @Test("map keys are sorted by their encoding whatever the input order")
    func mapOrder() {
        let map = CBOR.map([CBORPair(.text("bb"), .null), CBORPair(.text("a"), .null), CBORPair(.unsigned(10), .null)])
        #expect(Hex.encode(map.encoded()) == "a30af66161f6626262f6")
    }

    /// Each input breaks exactly one rule of the subset.
    static let rejected: [(String, String)] = [
        ("1817", "argument not in shortest form"), ("190017", "argument not in shortest form"),
        ("1a0000ffff", "argument not in shortest form"), ("1b00000000ffffffff", "argument not in shortest form"),
        ("f93c00", "1.0 as half is shortest, so this is fine"), ("fa3fc00000", "1.5 fits in half precision"),
        ("fb3ff8000000000000", "1.5 fits in half precision"), ("f97c00", "infinity"), ("f97e00", "NaN"),
        ("5f4101ff", "indefinite byte string"), ("9f01ff", "indefinite array"), ("c11a514b67b0", "tag"),
        ("f7", "undefined"), ("f0", "simple value"), ("62c3", "truncated text"), ("6280ff", "invalid UTF-8"),
        ("a2616101616101", "duplicate key"), ("a2616201616101", "keys out of order"), ("0000", "trailing bytes"),
        ("9a00000010", "array count beyond input"), ("", "empty"), ("1c", "reserved additional information"),
    ]

    @Test("non-canonical and unsupported encodings are refused", arguments: 0..<rejected.count)
    func refusals(index: Int) {
        let (hex, why) = Self.rejected[index]
        if hex == "f93c00" {
            #expect((try? CBORDecoder.decode(Hex.decode(hex)!)) == .float(1.0), "\(why)")
            return
        }
        #expect(throws: CBORError.self, "\(why)") { try CBORDecoder.decode(Hex.decode(hex)!) }
    }

    /// Text strings take a shortcut when they are ASCII; the verdict and the text must still be
    /// the standard library's for any bytes: ASCII, valid UTF-8 of every length, and bytes made
    /// invalid (a stray continuation, a truncated sequence, a surrogate, an overlong form, 0xFF).
    @Test("text strings decode as the standard library validates them, ASCII or not")
    func textStrings() {
        var random = SplitMix64(seed: 41)
        let pieces: [[UInt8]] = [Array("a".utf8), Array("ü".utf8), Array("水".utf8), Array("😀".utf8), [0x7F], [0x00],
                                 [0x80], [0xC3], [0xED, 0xA0, 0x80], [0xC0, 0xAF], [0xF0, 0x9F, 0x98], [0xFF]]
        for _ in 0..<4000 {
            let count = Int.random(in: 0...12, using: &random)
            let bytes = (0..<count).flatMap { _ in pieces[Int.random(in: 0..<(Int.random(in: 0...1, using: &random) == 0 ? 2 : pieces.count), using: &random)] }
            let expected = String(validating: bytes, as: UTF8.self)
            #expect(CBORDecoder.text(bytes[...]) == expected, "\(Hex.encode(bytes))")
            let item = CBOR.text(expected ?? "").encoded()
            if let expected, let decoded = try? CBORDecoder.decode(item) { #expect(decoded == .text(expected)) }
        }
    }

    @Test("nesting beyond the limit is refused without deep recursion")
    func depthLimit() {
        let deep = [UInt8](repeating: 0x81, count: 100_000) + [0x00]
        #expect(throws: CBORError.self) { try CBORDecoder.decode(deep) }
        let ok = [UInt8](repeating: 0x81, count: 10) + [0x00]
        #expect((try? CBORDecoder.decode(ok)) != nil)
    }

    @Test("decode(encode(x)) == x and encode(decode(bytes)) == bytes for random items", arguments: 0..<20)
    func roundTrip(seed: UInt64) throws {
        var rng = SplitMix64(seed: seed)
        for _ in 0..<50 {
            let item = randomItem(&rng, depth: 0)
            let bytes = item.encoded()
            let decoded = try CBORDecoder.decode(bytes)
            #expect(decoded.encoded() == bytes)
        }
    }

    func randomItem(_ rng: inout SplitMix64, depth: Int) -> CBOR {
        switch rng.next() % (depth > 3 ? 7 : 9) {
        case 0: return .unsigned(rng.next() >> (rng.next() % 64))
        case 1: return .negative(rng.next() >> (rng.next() % 64))
        case 2: return .bytes((0..<rng.next() % 5).map { _ in UInt8(truncatingIfNeeded: rng.next()) })
        case 3: return .text(["", "a", "ü", "水", "Nguyễn"][Int(rng.next() % 5)])
        case 4: return .bool(rng.next() % 2 == 0)
        case 5: return .null
        case 6:
            let d = [1.5, -0.25, 1.1, 65504, 3.4e38, 1e300, 5.960464477539063e-8, Double(rng.next() % 1000) / 7][Int(rng.next() % 8)]
            return .float(d)
        case 7: return .array((0..<rng.next() % 4).map { _ in randomItem(&rng, depth: depth + 1) })
        default:
            var pairs = [CBORPair]()
            var seen = Set<[UInt8]>()
            for _ in 0..<rng.next() % 4 {
                let key = randomItem(&rng, depth: 5)
                if seen.insert(key.encoded()).inserted { pairs.append(CBORPair(key, randomItem(&rng, depth: depth + 1))) }
            }
            return .map(pairs)
        }
    }
}

