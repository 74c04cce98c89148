import Testing
import TestSupport
import Tree

/// `OrderKey`'s byte strings must compare (bytewise, then by length, as SQLite compares blobs)
/// exactly as `FirebaseOrder` compares what they encode.
@Suite("Order keys")
struct OrderKeyTests {
    static let scalarPool: [Unicode.Scalar] = ["a", "b", "Z", "0", "1", "-", " ", "\u{7F}", "\u{E9}", "\u{7FF}", "\u{800}", "\u{D7FF}",
                                               "\u{E000}", "\u{FFFD}", "\u{FFFF}", "\u{10000}", "\u{1F600}", "\u{10FFFF}"]
    static let keyPool = ["0", "1", "2", "9", "10", "-1", "-5", "2147483647", "-2147483648", "2147483648", "-2147483649", "01", "-0", ""]

    static func bytesLess(_ a: [UInt8], _ b: [UInt8]) -> Bool { a.lexicographicallyPrecedes(b) }

    static func randomText(_ rng: inout SplitMix64) -> String {
        var text = String.UnicodeScalarView()
        for _ in 0..<(rng.next() % 4) { text.append(scalarPool[Int(rng.next() % UInt64(scalarPool.count))]) }
        return String(text)
    }

    @Test("key encodings order as key order and decode back", arguments: 0..<4)
    func keys(seed: UInt64) {
        var rng = SplitMix64(seed: seed)
        var keys = OrderKeyTests.keyPool.filter { !$0.isEmpty }
        for _ in 0..<150 {
            let text = OrderKeyTests.randomText(&rng)
            if !text.isEmpty { keys.append(rng.next() % 3 == 0 ? String(rng.next() % 30) + text : text) }
        }
        for a in keys {
            #expect(OrderKey.decodeKey(OrderKey.key(a)) == a)
            for b in keys {
                #expect(OrderKeyTests.bytesLess(OrderKey.key(a), OrderKey.key(b)) == FirebaseOrder.keyLess(a, b), "\(a) < \(b)")
            }
        }
    }

    @Test("value encodings order as value order", arguments: 0..<4)
    func values(seed: UInt64) {
        var rng = SplitMix64(seed: seed)
        var values: [JSONValue] = [.null, .bool(false), .bool(true), .number(0), .number(-0.0), .number(-1), .number(1),
                                   .number(-1e308), .number(1e308), .number(.leastNonzeroMagnitude), .number(-.leastNonzeroMagnitude), .number(0.1), .number(-0.1),
                                   .string(""), .object(["a": 1]), .object(["b": "x"])]
        for _ in 0..<120 {
            switch rng.next() % 3 {
            case 0: values.append(.number(Double(Int64(bitPattern: rng.next()) % 1000) / 7))
            case 1: values.append(.number(Double(bitPattern: rng.next() & 0x7FEF_FFFF_FFFF_FFFF | (rng.next() & 0x8000_0000_0000_0000))))
            default: values.append(.string(OrderKeyTests.randomText(&rng)))
            }
        }
        for a in values {
            for b in values {
                let less = FirebaseOrder.valueLess(a, b)
                #expect(OrderKeyTests.bytesLess(OrderKey.value(a), OrderKey.value(b)) == less, "\(a) < \(b)")
                if !less && !FirebaseOrder.valueLess(b, a) { #expect(OrderKey.value(a) == OrderKey.value(b), "\(a) ties \(b)") }
            }
        }
    }
}
