import Foundation

/// The hex vectors of Protocol.md: each fenced block tagged `vector` holds `key: value` lines
/// (a value may continue on lines indented by two spaces). Tests check the code against them,
/// so the specification and the bytes cannot drift apart.
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
}
