/// What `HTTPRequestParser.next()` reports.
public enum HTTPParserEvent: Sendable, Equatable {
    /// The head of a request that sent `Expect: 100-continue` and announces a body is complete.
    /// The client may be waiting before it sends the body, so the server should write
    /// `HTTPResponse.continueHead` now (or answer with a final status and close). Reported once,
    /// before that request's `.request` event, even if the body has already arrived, because the
    /// parser cannot know what the client saw; a 100 followed by the final response is valid.
    case continueExpected
    /// A complete request, body included.
    case request(HTTPRequest)
}
