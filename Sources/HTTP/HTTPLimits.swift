/// Resource bounds for `HTTPRequestParser`.
///
/// The local API listens for any program on the machine (and browsers), so a request must not be
/// able to make the node hold more than a known amount of memory: every byte the parser keeps is
/// counted against one of these limits.
public struct HTTPLimits: Hashable, Sendable {
    /// Longest request line, in bytes, not counting its CRLF. Longer: 414.
    public var maxRequestLineBytes: Int
    /// Longest single header (or trailer, or chunk-size) line, in bytes, not counting its CRLF.
    /// Longer: 431 (400 for a chunk-size line, which is body framing, not a header).
    public var maxHeaderLineBytes: Int
    /// Largest sum of the header lines' lengths (each without its CRLF); trailers of a chunked
    /// body count against the same budget. Larger: 431.
    public var maxHeaderBytes: Int
    /// Most header lines in a request; trailers count against the same budget. More: 431.
    public var maxHeaderCount: Int
    /// Largest body kept in memory, in bytes after removing any chunked framing. Larger: 413,
    /// unless the parser's `HTTPSpoolPolicy` takes it to a file.
    public var maxBodyBytes: Int

    /// Creates limits; the defaults are 8 KiB lines, 32 KiB of headers, 100 headers and 16 MiB
    /// bodies (the JSON parser's own document limit, so any body it could accept fits).
    public init(
        maxRequestLineBytes: Int = 8 * 1024,
        maxHeaderLineBytes: Int = 8 * 1024,
        maxHeaderBytes: Int = 32 * 1024,
        maxHeaderCount: Int = 100,
        maxBodyBytes: Int = 16 * 1024 * 1024
    ) {
        self.maxRequestLineBytes = maxRequestLineBytes
        self.maxHeaderLineBytes = maxHeaderLineBytes
        self.maxHeaderBytes = maxHeaderBytes
        self.maxHeaderCount = maxHeaderCount
        self.maxBodyBytes = maxBodyBytes
    }

    /// Largest body written to a spool file instead (`HTTPSpoolPolicy`), for the requests the
    /// policy accepts; larger: 413. 256 MiB, Firebase's limit for a REST write.
    public static let maxSpooledBodyBytes = 256 * 1024 * 1024

    /// The limits used when none are given.
    public static let `default` = HTTPLimits()
}

/// Which requests may have a body above `HTTPLimits.maxBodyBytes` (up to
/// `HTTPLimits.maxSpooledBodyBytes`), and where it is written as it arrives (`SpooledBody`).
public struct HTTPSpoolPolicy: Sendable {
    /// The directory of the spool files.
    public let directory: String
    /// Whether a request (its head, with no body yet) may have its body spooled.
    public let accepts: @Sendable (HTTPRequest) -> Bool
    /// The largest body spooled.
    public let maxBytes: Int
    /// How many spool files may exist at once (shared by every parser given this policy).
    public let budget: SpoolBudget

    public init(directory: String, maxBytes: Int = HTTPLimits.maxSpooledBodyBytes, budget: SpoolBudget = SpoolBudget(files: 4),
                accepts: @escaping @Sendable (HTTPRequest) -> Bool) {
        self.directory = directory
        self.maxBytes = maxBytes
        self.budget = budget
        self.accepts = accepts
    }
}

/// The spool files that may exist at once: each holds up to 256 MiB of disk, so that clients
/// sending large bodies together cannot fill the disk. A body beyond them is refused with 429
/// as soon as it would need a file. Used from one queue (the server's).
public final class SpoolBudget: @unchecked Sendable {
    public let files: Int
    public private(set) var used = 0

    public init(files: Int) { self.files = files }

    func take() throws(HTTPError) {
        guard used < files else { throw .spoolBusy }
        used += 1
    }

    func give() { used -= 1 }
}
