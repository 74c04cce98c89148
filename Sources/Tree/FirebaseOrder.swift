#if canImport(Glibc)
import Glibc
#endif
/// The orderings Firebase uses for keys and for values.
///
/// Queries (`orderByKey`, `orderByValue`, `orderByChild`) and JSON rendering
/// must agree with Firebase clients exactly, so the rules live in one place.
public enum FirebaseOrder: Sendable {
    /// Key order: keys that are canonical 32-bit signed integers come first,
    /// numerically; all other keys follow, by UTF-16 code units (as
    /// JavaScript compares strings).
    public static func keyLess(_ a: String, _ b: String) -> Bool {
        switch (integerKey(a), integerKey(b)) {
        case let (x?, y?): return x < y
        case (.some, nil): return true
        case (nil, .some): return false
        case (nil, nil): return utf16Less(a, b)
        }
    }

    /// Value order: null < false < true < numbers < strings < objects.
    /// Numbers compare numerically, strings by UTF-16 code units, objects all
    /// tie. Callers break ties with `keyLess` (see `entryLess`).
    public static func valueLess(_ a: JSONValue, _ b: JSONValue) -> Bool {
        let (rankA, rankB) = (rank(a), rank(b))
        if rankA != rankB { return rankA < rankB }
        switch (a, b) {
        case let (.number(x), .number(y)): return x < y
        case let (.string(x), .string(y)): return utf16Less(x, y)
        default: return false
        }
    }

    /// The full `orderBy` comparison of two children: by the value the query
    /// orders on, then by key when the values tie.
    public static func entryLess(key a: String, value valueA: JSONValue, key b: String, value valueB: JSONValue) -> Bool {
        if valueLess(valueA, valueB) { return true }
        if valueLess(valueB, valueA) { return false }
        return keyLess(a, b)
    }

    /// The keys sorted in key order. Each key is encoded once as its `OrderKey` bytes, which
    /// compare with memcmp: rendering a location of thousands of children spent most of its
    /// time comparing keys by UTF-16 code units.
    public static func sortedKeys(_ keys: some Sequence<String>) -> [String] {
        keys.map { (key: $0, order: OrderKey.key($0)) }
            .sorted { lhs, rhs in bytesLess(lhs.order, rhs.order) }
            .map(\.key)
    }

    /// Bytewise order, shorter first on a common prefix (as SQLite compares blobs).
    static func bytesLess(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        let common = min(a.count, b.count)
        let order = a.withUnsafeBufferPointer { x in b.withUnsafeBufferPointer { y in memcmp(x.baseAddress!, y.baseAddress!, common) } }
        return order != 0 ? order < 0 : a.count < b.count
    }

    /// The key's value when it is a 32-bit signed integer in canonical form
    /// ("0", "-5", "42"; not "-0", "01" or "+1").
    public static func integerKey(_ key: String) -> Int32? {
        let utf8 = key.utf8
        guard !utf8.isEmpty, utf8.count <= 11 else { return nil }
        var iterator = utf8.makeIterator()
        var negative = false
        var first = iterator.next()
        if first == UInt8(ascii: "-") {
            negative = true
            first = iterator.next()
        }
        guard let leading = first, leading >= UInt8(ascii: "0"), leading <= UInt8(ascii: "9") else { return nil }
        if leading == UInt8(ascii: "0") {
            // "0" is canonical; "-0" and "05" are not.
            return (!negative && utf8.count == 1) ? 0 : nil
        }
        var magnitude = Int64(leading - UInt8(ascii: "0"))
        while let byte = iterator.next() {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            magnitude = magnitude * 10 + Int64(byte - UInt8(ascii: "0"))
        }
        let value = negative ? -magnitude : magnitude
        guard value >= Int64(Int32.min), value <= Int64(Int32.max) else { return nil }
        return Int32(value)
    }

    /// JavaScript string comparison: lexicographic over UTF-16 code units.
    public static func utf16Less(_ a: String, _ b: String) -> Bool {
        a.utf16.lexicographicallyPrecedes(b.utf16)
    }

    private static func rank(_ value: JSONValue) -> Int {
        switch value {
        case .null: return 0
        case .bool(false): return 1
        case .bool(true): return 2
        case .number: return 3
        case .string: return 4
        case .object, .array: return 5
        }
    }
}
