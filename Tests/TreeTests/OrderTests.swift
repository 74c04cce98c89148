import Testing
import Tree

@Suite("Firebase ordering")
struct OrderTests {
    @Test func keyOrderPutsIntegersFirst() {
        #expect(FirebaseOrder.keyLess("2", "10"))
        #expect(FirebaseOrder.keyLess("10", "a"))
        #expect(FirebaseOrder.keyLess("a", "b"))
        #expect(!FirebaseOrder.keyLess("b", "a"))
        #expect(!FirebaseOrder.keyLess("a", "a"))
        #expect(FirebaseOrder.keyLess("-5", "0"))
        #expect(FirebaseOrder.keyLess("2147483647", "01"))
        #expect(FirebaseOrder.keyLess("-2147483648", "-1"))
        // Out of 32-bit range, non-canonical: plain strings.
        #expect(FirebaseOrder.keyLess("1", "2147483648"))
        #expect(!FirebaseOrder.keyLess("2147483648", "3"), "string key sorts after every integer key")
        #expect(FirebaseOrder.integerKey("2147483647") == Int32.max)
        #expect(FirebaseOrder.integerKey("-2147483648") == Int32.min)
        #expect(FirebaseOrder.integerKey("2147483648") == nil)
        #expect(FirebaseOrder.integerKey("-0") == nil)
        #expect(FirebaseOrder.integerKey("01") == nil)
        #expect(FirebaseOrder.integerKey("+1") == nil)
        #expect(FirebaseOrder.integerKey("1a") == nil)
        #expect(FirebaseOrder.integerKey("-") == nil)
        #expect(FirebaseOrder.sortedKeys(["b", "a", "10", "2", "-5", "01", "-0", "A"])
            == ["-5", "2", "10", "-0", "01", "A", "a", "b"])
    }

    @Test func stringKeysCompareByUTF16CodeUnits() {
        // U+FF61 is above the high surrogate of U+1F600 in UTF-16, but below it as a scalar.
        #expect(FirebaseOrder.keyLess("😀", "\u{FF61}"))
        #expect(!FirebaseOrder.keyLess("\u{FF61}", "😀"))
        #expect(FirebaseOrder.keyLess("Z", "a"))
        #expect(FirebaseOrder.keyLess("a", "ab"))
    }

    @Test func valueOrderFollowsTypeRank() {
        let ascending: [JSONValue] = [.null, false, true, -10, 0, 2.5, 100, "", "A", "a", "😀", "\u{FF61}", ["x": 1]]
        for (i, lower) in ascending.enumerated() {
            for (j, higher) in ascending.enumerated() {
                #expect(FirebaseOrder.valueLess(lower, higher) == (i < j), "\(lower) vs \(higher)")
            }
        }
        #expect(!FirebaseOrder.valueLess(["a": 1], ["b": 0]))
        #expect(!FirebaseOrder.valueLess(["b": 0], ["a": 1]))
    }

    @Test func entryOrderBreaksTiesByKey() {
        #expect(FirebaseOrder.entryLess(key: "b", value: 1, key: "a", value: 2))
        #expect(FirebaseOrder.entryLess(key: "2", value: 1, key: "10", value: 1))
        #expect(FirebaseOrder.entryLess(key: "z", value: ["o": 1], key: "zz", value: ["a": 2]))
        #expect(!FirebaseOrder.entryLess(key: "a", value: "x", key: "a", value: "x"))
    }
}
