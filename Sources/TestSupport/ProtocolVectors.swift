import Foundation

/// The hex vectors of Protocol.md: each fenced block tagged `vector` holds `key: value` lines
/// (a value may continue on lines indented by two spaces; the pieces are joined with nothing
/// between them, so long hex wraps freely). Tests check the code against them, so the
/// specification and the bytes cannot drift apart.
public enum ProtocolVectors {
    /// Every vector block, in document order.
    public static func all() throws -> [[String: String]] {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../Protocol.md")
        let text = try String(contentsOf: url, encoding: .utf8)
        var result = [[String: String]]()
        var current: [String: String]?
        var lastKey = ""
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("```vector") { current = [:]; continue }
            if line.hasPrefix("```"), let block = current { result.append(block); current = nil; continue }
            guard current != nil else { continue }
            if line.hasPrefix("  ") {
                current![lastKey, default: ""] += line.trimmingCharacters(in: .whitespaces)
            } else if let colon = line.firstIndex(of: ":") {
                lastKey = String(line[..<colon])
                current![lastKey] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            }
        }
        return result
    }

    /// The vectors of one kind.
    public static func of(kind: String) throws -> [[String: String]] {
        try all().filter { $0["kind"] == kind }
    }

    /// The vector with this name, if there is one.
    public static func named(_ name: String) throws -> [String: String]? {
        try all().first { $0["name"] == name }
    }

    /// A value that is a list: items separated by commas (a list may wrap after a comma).
    /// An empty or missing value is the empty list.
    public static func list(_ vector: [String: String], _ key: String) -> [String] {
        guard let value = vector[key], !value.isEmpty else { return [] }
        return value.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
    }

    /// The values of `prefix-1`, `prefix-2`, ... in order, up to the first number missing:
    /// the messages of an exchange.
    public static func numbered(_ vector: [String: String], _ prefix: String) -> [String] {
        var values = [String]()
        while let value = vector["\(prefix)-\(values.count + 1)"] { values.append(value) }
        return values
    }

    /// Lower-case hex decoded to bytes; nil when it is not whole bytes of hex digits.
    public static func bytes(_ hex: String) -> [UInt8]? {
        let digits = Array(hex.utf8)
        guard digits.count % 2 == 0 else { return nil }
        var out = [UInt8]()
        out.reserveCapacity(digits.count / 2)
        for index in stride(from: 0, to: digits.count, by: 2) {
            guard let high = nibble(digits[index]), let low = nibble(digits[index + 1]) else { return nil }
            out.append(high << 4 | low)
        }
        return out
    }

    private static func nibble(_ digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return digit - UInt8(ascii: "a") + 10
        default: return nil
        }
    }
}
