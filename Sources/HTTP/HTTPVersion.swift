/// The protocol version of a request. Only 1.0 and 1.1 are spoken; the version decides the
/// keep-alive default and whether `Host` and `Transfer-Encoding` are allowed.
public struct HTTPVersion: Hashable, Sendable, CustomStringConvertible {
    /// The digit before the dot.
    public var major: Int
    /// The digit after the dot.
    public var minor: Int

    /// Creates a version; the parser only ever produces 1.0 and 1.1.
    public init(major: Int, minor: Int) {
        self.major = major
        self.minor = minor
    }

    /// HTTP/1.0: connections close after each response unless `Connection: keep-alive`.
    public static let http1_0 = HTTPVersion(major: 1, minor: 0)
    /// HTTP/1.1: connections persist unless `Connection: close`.
    public static let http1_1 = HTTPVersion(major: 1, minor: 1)

    /// "HTTP/1.1".
    public var description: String { "HTTP/\(major).\(minor)" }
}
