import HTTP
import Transport

/// Where a cookie-authenticated request may come from: the web app's own origin only.
///
/// Browsers treat every port of a host as the same site, so `SameSite=Strict` still attaches the
/// session cookie to a request made by a page that another local server (any port of 127.0.0.1)
/// serves; the response may be unreadable to that page under CORS, but the write would be done.
/// Browsers say who makes a request: `Origin` on CORS and non-GET requests, and `Sec-Fetch-Site`
/// on every request to a trustworthy origin (loopback is one). A client that sends neither (curl, a script) is not a page in a browser, and
/// holds the cookie only if given it.
enum WebOrigin {
    /// Whether `request` may use the session cookie: its `Origin`, if any, is one of the API's own,
    /// and its `Sec-Fetch-Site`, if any, is `same-origin` or `none` (typed or opened by the user).
    static func allowsCookie(_ request: HTTPRequest, server address: SocketAddress) -> Bool {
        if let site = request.header("sec-fetch-site")?.lowercased(), site != "same-origin", site != "none" { return false }
        guard let origin = request.header("origin") else { return true }
        return own(address, host: request.header("host")).contains(origin.lowercased())
    }

    /// The origins the app is served at, bound at `address`: that address itself; on loopback
    /// or a wildcard address, `localhost` too (it resolves to loopback), and for a wildcard the
    /// loopback address `lanchat open` prints and whatever host the request was sent to (the
    /// wildcard serves every address of the machine; a page elsewhere gets no cookie of ours
    /// sent with it, since the browser keys cookies by the host they came from).
    static func own(_ address: SocketAddress, host: String?) -> Set<String> {
        let port = address.port
        var origins: Set<String> = ["http://\(address)".lowercased()]
        if address.isLoopback || address.isUnspecified { origins.insert("http://localhost:\(port)") }
        if address.isUnspecified {
            origins.insert(address.family == .ipv4 ? "http://127.0.0.1:\(port)" : "http://[::1]:\(port)")
            if let host { origins.insert("http://\(host)".lowercased()) }
        }
        return origins
    }
}
