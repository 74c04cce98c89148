/// Why a key, path, value or update cannot enter the tree.
///
/// These are user-facing (they end up in CLI output and peer rejections), so
/// each case says plainly what rule was broken.
public enum TreeError: Error, Hashable, Sendable, CustomStringConvertible {
    /// A key breaks Firebase's key rules; carries the key and the reason.
    case invalidKey(String, reason: String)
    /// A path is longer than 768 UTF-8 bytes (segments joined by "/").
    case pathTooLong
    /// A path, or a value written below a path, is deeper than 32 levels.
    case pathTooDeep
    /// A string given as a storage key is not of the form "" or "/a/b".
    case invalidStorageKey(String)
    /// A `.sv` placeholder is not `"timestamp"` or `{"increment": number}`.
    case invalidServerValue
    /// A multi-path update body is malformed; carries the reason.
    case invalidUpdate(String)
    /// A number is NaN or infinite, which JSON and the tree cannot hold.
    case nonFiniteNumber

    /// A sentence naming the broken rule (and the offending key, if any).
    public var description: String {
        switch self {
        case .invalidKey(let key, let reason):
            return "invalid key \(Self.quoted(key)): \(reason)"
        case .pathTooLong:
            return "path is longer than \(Path.maxByteLength) bytes"
        case .pathTooDeep:
            return "path is deeper than \(Path.maxDepth) levels"
        case .invalidStorageKey(let key):
            return "invalid storage key \(Self.quoted(key)): expected \"\" or \"/a/b\""
        case .invalidServerValue:
            return "invalid server value: expected {\".sv\": \"timestamp\"} or {\".sv\": {\"increment\": <number>}}"
        case .invalidUpdate(let reason):
            return "invalid update: \(reason)"
        case .nonFiniteNumber:
            return "number is not finite"
        }
    }

    /// The key as a JSON string, so control characters show up readably.
    private static func quoted(_ key: String) -> String {
        JSONValue.string(key).serialized()
    }
}
