/// Why a request was refused. Each case maps to the status the server answers with before it
/// closes the connection: once framing is in doubt, the next request cannot be found safely, so
/// a parser that reported an error stays failed.
public enum HTTPError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The request line is not `METHOD SP origin-form-target SP HTTP/x.y` (400).
    case malformedRequestLine
    /// A header line is not `name: value` with a token name and a value free of control bytes,
    /// or uses the obsolete line folding (400).
    case malformedHeader
    /// A line ended in a bare LF or the CRLF was broken; only CRLF ends a line here, because
    /// disagreeing about line ends is how requests get smuggled past proxies (400).
    case malformedLineEnding
    /// The path or query has a `%` not followed by two hex digits, decodes to invalid UTF-8, or
    /// the target is not in origin form (400).
    case invalidTarget
    /// An HTTP/1.1 request has no `Host` header, or a request has more than one (400, RFC 9112).
    case invalidHost
    /// `Content-Length` is not all digits, or several values disagree (400).
    case invalidContentLength
    /// Both `Content-Length` and `Transfer-Encoding` are present, or `Transfer-Encoding` came with
    /// HTTP/1.0, or `chunked` is not the last coding: the body's end is ambiguous, the classic
    /// request-smuggling setup (400).
    case ambiguousFraming
    /// A chunk-size line or the CRLF after a chunk's data is malformed (400).
    case malformedChunk
    /// The request line is longer than `HTTPLimits.maxRequestLineBytes` (414).
    case requestLineTooLong
    /// One header or trailer line is longer than `HTTPLimits.maxHeaderLineBytes` (431).
    case headerLineTooLong
    /// The header lines together exceed `HTTPLimits.maxHeaderBytes` (431).
    case headersTooLarge
    /// There are more than `HTTPLimits.maxHeaderCount` header lines (431).
    case tooManyHeaders
    /// The body is (or announces itself as) larger than `HTTPLimits.maxBodyBytes` (413).
    case bodyTooLarge
    /// A transfer coding other than `chunked` was used; the node decodes no compression (501).
    case unsupportedTransferCoding
    /// `Expect` names something other than `100-continue` (417).
    case unsupportedExpectation
    /// The version is well-formed but not HTTP/1.0 or HTTP/1.1 (505).
    case unsupportedVersion
    /// A large body could not be written to its spool file (a full disk) (507).
    case spoolFailed
    /// As many large bodies as the spool takes at once are arriving already (429).
    case spoolBusy

    /// The status code to answer with.
    public var status: Int {
        switch self {
        case .malformedRequestLine, .malformedHeader, .malformedLineEnding, .invalidTarget,
             .invalidHost, .invalidContentLength, .ambiguousFraming, .malformedChunk:
            return 400
        case .requestLineTooLong: return 414
        case .headerLineTooLong, .headersTooLarge, .tooManyHeaders: return 431
        case .bodyTooLarge: return 413
        case .unsupportedTransferCoding: return 501
        case .unsupportedExpectation: return 417
        case .unsupportedVersion: return 505
        case .spoolFailed: return 507
        case .spoolBusy: return 429
        }
    }

    /// A short sentence for the error body, safe to show to the client.
    public var reason: String {
        switch self {
        case .malformedRequestLine: return "malformed request line"
        case .malformedHeader: return "malformed header line"
        case .malformedLineEnding: return "lines must end with CRLF"
        case .invalidTarget: return "invalid request target or percent-encoding"
        case .invalidHost: return "exactly one Host header is required"
        case .invalidContentLength: return "invalid Content-Length"
        case .ambiguousFraming: return "ambiguous message framing (Content-Length and Transfer-Encoding)"
        case .malformedChunk: return "malformed chunked body"
        case .requestLineTooLong: return "request line too long"
        case .headerLineTooLong: return "header line too long"
        case .headersTooLarge: return "headers too large"
        case .tooManyHeaders: return "too many headers"
        case .bodyTooLarge: return "request body too large"
        case .unsupportedTransferCoding: return "unsupported transfer coding"
        case .unsupportedExpectation: return "unsupported expectation"
        case .unsupportedVersion: return "HTTP version not supported"
        case .spoolFailed: return "the request body could not be stored"
        case .spoolBusy: return "too many large request bodies at once; try again when one is done"
        }
    }

    /// "400 malformed header line", for logs.
    public var description: String { "\(status) \(reason)" }
}
