import HTTP
import Node

/// The web chat served at `/` of the local API: the page and its two assets (the files in Web/, see WebAssets),
/// and the login that turns a one-time token from `lanchat open` into a session cookie.
///
/// The page and assets hold no data, so they are served without credentials; every data
/// request needs the API token or the session cookie, which the browser sends with the page's
/// own requests and EventSource streams (same origin), and which counts only when they come
/// from the page's own origin (`WebOrigin`). The cookie's name carries the API's port,
/// since browsers share cookies between the ports of one host: two nodes on one machine would
/// otherwise log each other's browser sessions out.
enum WebApp {
    /// The assets by path segments (`/` is no segment).
    static let assets: [[String]: (type: String, body: [UInt8])] = [
        []: ("text/html; charset=utf-8", WebAssets.indexHTML),
        ["app.js"]: ("text/javascript; charset=utf-8", WebAssets.appJS),
        ["app.css"]: ("text/css; charset=utf-8", WebAssets.appCSS),
    ]

    /// Session cookies live this long in the browser (the node forgets unused sessions after as
    /// long, and all of them when it restarts).
    static let cookieMaxAge = 30 * 24 * 3600

    static func cookieName(_ server: APIServer) -> String { "lanchat_session_\(server.address.port)" }

    /// Whether the request is a GET of the page or an asset, which needs no credentials.
    static func isAsset(_ request: HTTPRequest) -> Bool {
        (request.method == "GET" || request.method == "HEAD") && assets[request.path] != nil
    }

    /// Whether the request carries this API's session cookie, live or not.
    static func hasCookie(_ request: HTTPRequest, server: APIServer) -> Bool {
        cookie(cookieName(server), in: request) != nil
    }

    /// Whether the request's session cookie is live (which marks it used). Called on the node's queue.
    static func hasLiveSession(_ request: HTTPRequest, server: APIServer) -> Bool {
        guard let secret = cookie(cookieName(server), in: request) else { return false }
        return server.node.isLoginSessionOnQueue(secret)
    }

    /// The value of cookie `name` in the request's `Cookie` headers.
    static func cookie(_ name: String, in request: HTTPRequest) -> String? {
        for header in request.headerValues("cookie") {
            for pair in header.split(separator: ";") {
                let parts = pair.split(separator: "=", maxSplits: 1)
                guard parts.count == 2, parts[0].trimmingCharacters(in: .whitespaces) == name else { continue }
                return parts[1].trimmingCharacters(in: .whitespaces)
            }
        }
        return nil
    }

    /// The page or an asset, or the login redirect; nil for every other request.
    static func handle(_ request: HTTPRequest, server: APIServer) -> HTTPResponse? {
        guard request.method == "GET", let asset = assets[request.path] else { return nil }
        if request.path.isEmpty, let token = request.queryValue("login") {
            // Redirect either way, so the token leaves the address bar and the history.
            var headers: [(String, String)] = security + [("Location", "/"), ("Content-Type", "text/plain; charset=utf-8")]
            if let session = server.node.redeemLoginTokenOnQueue(token) {
                headers.append(("Set-Cookie", "\(cookieName(server))=\(session); HttpOnly; SameSite=Strict; Path=/; Max-Age=\(cookieMaxAge)"))
            } else {
                headers[1] = ("Location", "/#login-failed")
            }
            return HTTPResponse(status: 303, headers: headers, body: Array("See /\n".utf8))
        }
        return HTTPResponse(status: 200, headers: security + [("Content-Type", asset.type)], body: asset.body)
    }

    /// Headers of every web app response: never cached (a new binary serves new assets), nothing
    /// loaded from elsewhere, not framed, no referrer.
    static let security: [(String, String)] = [
        ("Cache-Control", "no-cache"),
        ("Content-Security-Policy", "default-src 'self'; img-src 'self' blob:; style-src 'self'; script-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"),
        ("X-Content-Type-Options", "nosniff"),
        ("Referrer-Policy", "no-referrer"),
        ("X-Frame-Options", "DENY"),
    ]
}
