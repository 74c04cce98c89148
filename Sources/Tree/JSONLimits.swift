/// Resource bounds for the JSON parser.
///
/// Input arrives from untrusted peers, so parsing must be bounded in memory
/// and in recursion depth no matter what bytes are received.
public struct JSONLimits: Hashable, Sendable {
    /// Largest accepted document, in bytes.
    public var maxBytes: Int
    /// Deepest accepted nesting of arrays and objects (a bare scalar is depth 0).
    public var maxDepth: Int
    /// Largest accepted decoded string (keys included), in UTF-8 bytes.
    public var maxStringBytes: Int

    /// Creates limits; the defaults are 16 MiB documents, 64 levels and
    /// 10 MiB strings (Firebase's own string limit).
    public init(maxBytes: Int = 16 * 1024 * 1024, maxDepth: Int = 64, maxStringBytes: Int = 10 * 1024 * 1024) {
        self.maxBytes = maxBytes
        self.maxDepth = maxDepth
        self.maxStringBytes = maxStringBytes
    }

    /// The limits used when none are given.
    public static let `default` = JSONLimits()
}
