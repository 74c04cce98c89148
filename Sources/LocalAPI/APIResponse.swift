import HTTP
import Store
import Tree

/// Responses as Firebase clients expect them: JSON with a charset (Python garbles non-ASCII
/// text without it), CORS for browsers, errors as `{"error": "..."}`.
enum APIResponse {
    static let jsonType = "application/json; charset=utf-8"

    static func json(_ value: JSONValue, status: Int = 200, extra: [(String, String)] = [], pretty: Bool = false) -> HTTPResponse {
        json(serialized: pretty ? value.serializedPretty() : value.serialized(), status: status, extra: extra)
    }

    /// The value of `tagged` as the body, its ETag in the headers: one serialization for both.
    static func json(_ tagged: TaggedJSON, status: Int = 200) -> HTTPResponse {
        json(serialized: tagged.text, status: status, extra: [("ETag", tagged.etag)])
    }

    private static func json(serialized text: String, status: Int, extra: [(String, String)]) -> HTTPResponse {
        HTTPResponse(status: status, headers: common + [("Content-Type", jsonType)] + extra, body: Array(text.utf8))
    }

    static func error(_ status: Int, _ message: String) -> HTTPResponse {
        json(.object(["error": .string(message)]), status: status)
    }

    /// The answer to a failure of the node itself (its store, its disk), not of the request.
    ///
    /// A full disk is 507 Insufficient Storage (RFC 4918 §11.5: the server cannot store what the
    /// request needs): firebase-admin's REST client retries 500 and 503 on its own, even a POST,
    /// and a retry cannot succeed until someone frees space, so the client must see the error
    /// at once. Other failures (an I/O error, a failed sync) are 500: they may be transient, and
    /// those clients retry them a bounded number of times. Either way the body says what failed
    /// and on which file, and the write was not acknowledged.
    static func failure(_ error: any Error) -> HTTPResponse {
        if let error = error as? StoreError, error.isDiskFull { return Self.error(507, "\(error)") }
        return Self.error(500, "\(error)")
    }

    static func noContent(extra: [(String, String)] = []) -> HTTPResponse {
        HTTPResponse(status: 204, headers: common + extra)
    }

    static func preflight() -> HTTPResponse {
        HTTPResponse(status: 204, headers: common + [
            ("Access-Control-Allow-Methods", "GET, PUT, POST, PATCH, DELETE, OPTIONS"),
            ("Access-Control-Allow-Headers", "Authorization, Content-Type, X-Firebase-ETag, If-Match, If-None-Match"),
            ("Access-Control-Max-Age", "600"),
        ])
    }

    static let common: [(String, String)] = [
        ("Access-Control-Allow-Origin", "*"),
        ("Access-Control-Expose-Headers", "ETag"),
        ("Cache-Control", "no-cache"),
    ]
}

/// A value's compact JSON text and its ETag (`firebaseETag(ofJSON:)`), from one serialization:
/// a reply that names a location's ETag and sends its value hashes the text it sends, rather
/// than serializing the value once for each.
struct TaggedJSON {
    let text: String
    let etag: String

    init(_ value: JSONValue) {
        text = value.serialized()
        etag = firebaseETag(ofJSON: text)
    }
}
