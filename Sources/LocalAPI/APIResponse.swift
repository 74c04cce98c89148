import HTTP
import Tree

/// Responses as Firebase clients expect them: JSON with a charset (Python garbles non-ASCII
/// text without it), CORS for browsers, errors as `{"error": "..."}`.
enum APIResponse {
    static let jsonType = "application/json; charset=utf-8"

    static func json(_ value: JSONValue, status: Int = 200, extra: [(String, String)] = [], pretty: Bool = false) -> HTTPResponse {
        let text = pretty ? value.serializedPretty() : value.serialized()
        return HTTPResponse(status: status, headers: common + [("Content-Type", jsonType)] + extra, body: Array(text.utf8))
    }

    static func error(_ status: Int, _ message: String) -> HTTPResponse {
        json(.object(["error": .string(message)]), status: status)
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
