/// One complete request, as the parser delivers it: the head taken apart and decoded, and the
/// whole body with any chunked framing removed.
public struct HTTPRequest: Sendable, CustomStringConvertible {
    /// The method token exactly as sent (methods are case-sensitive: `get` is not `GET`).
    public var method: String
    /// The request target exactly as sent, e.g. `/a%20b.json?orderBy=%22%24key%22`.
    public var target: String
    /// HTTP/1.0 or HTTP/1.1.
    public var version: HTTPVersion
    /// The path part of `target`, still percent-encoded.
    public var rawPath: String
    /// The path's segments, percent-decoded as UTF-8, empty segments skipped.
    public var path: [String]
    /// The query parameters in the order sent, percent-decoded; `+` stays `+` (Firebase query
    /// values are JSON, where `+` is a literal character, not a space).
    public var query: [(name: String, value: String)]
    /// The header lines in the order sent; names keep their case, values are trimmed of
    /// surrounding whitespace. Use `header(_:)` for case-insensitive lookup.
    public var headers: [(name: String, value: String)]
    /// The body bytes (empty when there is none, or when the body was spooled).
    public var body: [UInt8]
    /// The body, when it was larger than the parser keeps in memory and the parser's
    /// `HTTPSpoolPolicy` took it to a file (`body` is then empty).
    public var spooledBody: SpooledBody?
    /// Whether the connection may carry another request after this one's response: HTTP/1.1
    /// unless `Connection: close`; HTTP/1.0 only with `Connection: keep-alive`.
    public var keepAlive: Bool
    /// Whether an HTTP/1.1 client sent `Expect: 100-continue` (the parser also reports it as an
    /// event as soon as the head is complete, so the server can answer before the body arrives).
    public var expectsContinue: Bool

    /// Builds a request from its parts, decoding the target and deriving `keepAlive` and
    /// `expectsContinue` from the headers the same way the parser does; for servers' tests.
    public init(
        method: String,
        target: String,
        version: HTTPVersion = .http1_1,
        headers: [(name: String, value: String)] = [],
        body: [UInt8] = []
    ) throws(HTTPError) {
        let parsed = try HTTPRequestTarget(parsing: target)
        let head = HTTPRequestHead(method: method, target: target, version: version, parsedTarget: parsed, headers: headers)
        self.init(head: head, body: body)
    }

    /// The first value of the header `name` (compared ignoring ASCII case), or nil.
    public func header(_ name: String) -> String? {
        headers.first { ASCII.equalsIgnoringCase($0.name, name) }?.value
    }

    /// Every value of the header `name`, in order (compared ignoring ASCII case).
    public func headerValues(_ name: String) -> [String] {
        headers.filter { ASCII.equalsIgnoringCase($0.name, name) }.map(\.value)
    }

    /// The comma-separated elements of every `name` header, trimmed and lowercased (ASCII), with
    /// empty elements dropped: the list syntax of `Connection` and `Transfer-Encoding`.
    public func headerTokens(_ name: String) -> [String] {
        headerValues(name).flatMap { value in
            value.utf8.split(separator: ASCII.comma, omittingEmptySubsequences: true).compactMap { element in
                let trimmed = element.drop(while: ASCII.isWhitespace).reversed().drop(while: ASCII.isWhitespace).reversed()
                return trimmed.isEmpty ? nil : ASCII.lowercased(String(decoding: trimmed, as: UTF8.self))
            }
        }
    }

    /// The first value of the query parameter `name` (exact match), or nil.
    public func queryValue(_ name: String) -> String? {
        query.first { $0.name == name }?.value
    }

    /// "GET /a.json HTTP/1.1 (3 headers, 0 body bytes)", for logs and test failures.
    public var description: String {
        "\(method) \(target) \(version) (\(headers.count) headers, \(body.count) body bytes)"
    }

    /// The persistence rule of RFC 9112 §9.3.
    static func keepAlive(version: HTTPVersion, connectionTokens: [String]) -> Bool {
        if connectionTokens.contains("close") { return false }
        if version == .http1_0 { return connectionTokens.contains("keep-alive") }
        return true
    }
}

extension HTTPRequest: Equatable {
    /// Field-by-field equality (the header and query tuples prevent a synthesized one).
    public static func == (lhs: HTTPRequest, rhs: HTTPRequest) -> Bool {
        lhs.method == rhs.method && lhs.target == rhs.target && lhs.version == rhs.version
            && lhs.rawPath == rhs.rawPath && lhs.path == rhs.path
            && lhs.query.elementsEqual(rhs.query, by: { $0 == $1 })
            && lhs.headers.elementsEqual(rhs.headers, by: { $0 == $1 })
            && lhs.body == rhs.body && lhs.keepAlive == rhs.keepAlive
            && lhs.expectsContinue == rhs.expectsContinue
    }
}
