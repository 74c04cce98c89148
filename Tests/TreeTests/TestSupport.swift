// Shared helpers for the Tree tests: a seeded generator and random values.
import Tree
import TestSupport

/// Builds random values for round-trip tests.
struct ValueFactory {
    var rng: SplitMix64

    /// Characters for string values: escapes, controls, non-ASCII, astral.
    static let stringPieces: [String] = [
        "a", "Z", "0", " ", "\"", "\\", "/", "\n", "\r", "\t", "\u{08}", "\u{0C}", "\u{00}", "\u{1F}",
        "\u{7F}", "é", "ễ", "박", "😀", "\u{2028}", "\u{FFFF}", "{", "]", ",", ":", "e\u{301}",
    ]
    /// Pieces for keys: every one is a legal key character.
    static let keyPieces: [String] = ["a", "b", "Z", "_", "-", " ", "x", "ễ", "박", "😀", "~", "%", "@", "q"]
    /// Keys that exercise integer ordering and the array rule.
    static let numericKeys: [String] = ["0", "1", "2", "3", "4", "5", "10", "-3", "01", "2147483648"]

    mutating func int(_ range: ClosedRange<Int>) -> Int { Int.random(in: range, using: &rng) }

    mutating func number() -> Double {
        switch int(0...6) {
        case 0: return Double(int(-1000...1000))
        case 1: return Double(int(-9_007_199_254_740_991...9_007_199_254_740_991))
        case 2: return Double.random(in: -1...1, using: &rng)
        case 3: return Double.random(in: -1e300...1e300, using: &rng)
        case 4:
            // Any finite bit pattern, including subnormals.
            while true {
                let candidate = Double(bitPattern: rng.next())
                if candidate.isFinite { return candidate }
            }
        case 5: return [0.1, 1e21, .leastNonzeroMagnitude, 9_007_199_254_740_992, 1.7976931348623157e308, -0.0][int(0...5)]
        default: return Double(int(0...99)) / 8
        }
    }

    mutating func string() -> String {
        (0..<int(0...8)).map { _ in Self.stringPieces[int(0...(Self.stringPieces.count - 1))] }.joined()
    }

    mutating func key(numeric: Bool) -> String {
        if numeric, int(0...2) == 0 { return Self.numericKeys[int(0...(Self.numericKeys.count - 1))] }
        let first = ["a", "b", "Z", "k", "ễ", "😀"][int(0...5)]
        return first + (0..<int(0...4)).map { _ in Self.keyPieces[int(0...(Self.keyPieces.count - 1))] }.joined()
    }

    mutating func primitive() -> JSONValue {
        switch int(0...2) {
        case 0: return .bool(int(0...1) == 1)
        case 1: return .number(number())
        default: return .string(string())
        }
    }

    /// A value already in tree form (no arrays, nulls or empty objects).
    mutating func treeValue(depth: Int = 0) -> JSONValue {
        if depth >= 4 || int(0...2) != 0 { return primitive() }
        var members: [String: JSONValue] = [:]
        // Sometimes build a dense integer-keyed object, which renders as an array.
        if int(0...2) == 0 {
            for index in 0..<int(1...5) where int(0...4) != 0 || index == 0 {
                members[String(index)] = treeValue(depth: depth + 1)
            }
        } else {
            for _ in 0..<int(1...5) { members[key(numeric: true)] = treeValue(depth: depth + 1) }
        }
        return .object(members)
    }

    /// A raw value that survives parse(serialized()) unchanged: arrays, nulls
    /// and empty containers allowed, but no integer-like object keys.
    mutating func rawValue(depth: Int = 0) -> JSONValue {
        if depth >= 4 || int(0...2) != 0 {
            return int(0...5) == 0 ? .null : primitive()
        }
        if int(0...1) == 0 {
            return .array((0..<int(0...4)).map { _ in rawValue(depth: depth + 1) })
        }
        var members: [String: JSONValue] = [:]
        for _ in 0..<int(0...4) { members[key(numeric: false)] = rawValue(depth: depth + 1) }
        return .object(members)
    }
}

/// Parses or fails the test by returning nil.
func parsed(_ text: String) -> JSONValue? {
    try? JSONValue.parse(text)
}

/// The error the parser reports for `text`, or nil when it is accepted.
func parseError(_ text: String, limits: JSONLimits = .default) -> JSONError? {
    parseError(Array(text.utf8), limits: limits)
}

/// The error the parser reports for `bytes`, or nil when they are accepted.
func parseError(_ bytes: [UInt8], limits: JSONLimits = .default) -> JSONError? {
    do {
        _ = try JSONValue.parse(bytes, limits: limits)
        return nil
    } catch {
        return error
    }
}

/// Parses text known to be valid JSON in tree form (test fixture helper).
func tree(_ text: String) throws -> JSONValue {
    try JSONValue.parse(text).normalized()
}
