/// The part of a request known once its head has been read, kept while the body arrives.
struct HTTPRequestHead: Sendable {
    var method: String
    var target: String
    var version: HTTPVersion
    var parsedTarget: HTTPRequestTarget
    var headers: [(name: String, value: String)] = []

    /// The request this head starts, with `body`; `keepAlive` and `expectsContinue` follow the
    /// headers exactly as `HTTPRequest.init` derives them.
    func request(body: [UInt8]) -> HTTPRequest {
        HTTPRequest(head: self, body: body)
    }
}

extension HTTPRequest {
    /// Assembles a request from a head whose target was already decoded (no second parse).
    init(head: HTTPRequestHead, body: [UInt8]) {
        method = head.method
        target = head.target
        version = head.version
        rawPath = head.parsedTarget.rawPath
        path = head.parsedTarget.path
        query = head.parsedTarget.query
        headers = head.headers
        self.body = body
        keepAlive = false
        expectsContinue = false
        keepAlive = Self.keepAlive(version: version, connectionTokens: headerTokens("connection"))
        // HTTP/1.0 predates 100 Continue: its Expect header is ignored (RFC 9110 §10.1.1).
        expectsContinue = version == .http1_1
            && headerValues("expect").contains { ASCII.equalsIgnoringCase($0, "100-continue") }
    }
}
