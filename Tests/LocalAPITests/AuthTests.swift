import Testing
import Tree

@Suite("Local API: authorization")
struct AuthTests {
    @Test func missingTokenIsPermissionDenied() throws {
        let api = try APIFixture()
        defer { api.shutdown() }
        let reply = try api.call("GET", "/a.json", auth: false)
        #expect(reply.status == 401)
        #expect(reply.text == #"{"error":"Permission denied"}"#)
        #expect(reply.header("Content-Type") == "application/json; charset=utf-8")
    }

    @Test func wrongTokenIsPermissionDenied() throws {
        let api = try APIFixture()
        defer { api.shutdown() }
        let header = try api.call("GET", "/a.json", headers: [("Authorization", "Bearer nope")], auth: false)
        #expect(header.status == 401)
        #expect(header.json == ["error": "Permission denied"])
        let query = try api.call("GET", "/a.json?auth=nope", auth: false)
        #expect(query.status == 401)
        // A prefix of the right token is not the token.
        let prefix = try api.call("GET", "/a.json?auth=\(APIFixture.token.dropLast())", auth: false)
        #expect(prefix.status == 401)
        // Neither is another scheme carrying it.
        let basic = try api.call("GET", "/a.json", headers: [("Authorization", "Basic \(APIFixture.token)")], auth: false)
        #expect(basic.status == 401)
    }

    @Test func bearerHeaderAndQueryTokenAreAccepted() throws {
        let api = try APIFixture()
        defer { api.shutdown() }
        #expect(try api.call("GET", "/a.json").status == 200)
        #expect(try api.call("GET", "/a.json", headers: [("authorization", "bearer \(APIFixture.token)")], auth: false).status == 200)
        let query = try api.call("GET", "/a.json?auth=\(APIFixture.token)", auth: false)
        #expect(query.status == 200)
        #expect(query.text == "null")
        // Writes too, and the node endpoints.
        #expect(try api.call("PUT", "/a.json?auth=\(APIFixture.token)", body: "1", auth: false).status == 200)
        #expect(try api.call("GET", "/.lanchat/status", auth: false).status == 401)
    }

    @Test func streamsNeedTheTokenToo() throws {
        let api = try APIFixture()
        defer { api.shutdown() }
        let client = try api.client()
        let head = try client.openStream("/a.json", auth: false)
        #expect(head.status == 401)
        let byQuery = try api.client()
        #expect(try byQuery.openStream("/a.json?auth=\(APIFixture.token)", auth: false).status == 200)
        #expect(try byQuery.nextEvent().name == "put")
    }
}

/// The web app's session cookie counts only on requests from the app's own origin: other local
/// ports are the same site to a browser, so SameSite alone would let their pages use it.
@Suite("Local API: the session cookie and origins")
struct CookieOriginTests {
    /// A session cookie (`name=value`) from a one-time login, as the browser would keep it.
    static func login(_ api: APIFixture) throws -> String {
        let token = api.node.queue.sync { api.node.issueLoginTokenOnQueue() }
        let reply = try api.call("GET", "/?login=\(token)", auth: false)
        #expect(reply.status == 303)
        let setCookie = try #require(reply.header("Set-Cookie"))
        return String(try #require(setCookie.split(separator: ";").first))
    }

    /// Another local server's page: same host, another port.
    static func foreign(_ api: APIFixture) -> String { "http://127.0.0.1:\(api.port == 65535 ? 1 : api.port + 1)" }

    @Test func cookieFromAForeignOriginIsForbiddenAndWritesNothing() throws {
        let api = try APIFixture()
        defer { api.shutdown() }
        let cookie = try Self.login(api)
        let headers = [("Cookie", cookie), ("Origin", Self.foreign(api))]
        let put = try api.call("PUT", "/a.json", headers: headers, body: "1", auth: false)
        #expect(put.status == 403)
        #expect(put.text == #"{"error":"Permission denied"}"#)
        #expect(put.header("Access-Control-Allow-Credentials") == nil)
        #expect(try api.call("POST", "/a.json", headers: headers, body: "2", auth: false).status == 403)
        #expect(try api.call("GET", "/a.json", headers: headers, auth: false).status == 403)
        let stream = try api.call("GET", "/a.json", headers: headers + [("Accept", "text/event-stream")], auth: false)
        #expect(stream.status == 403)
        #expect(try api.call("GET", "/a.json").text == "null")
        // The page itself holds no data and is served to anyone.
        #expect(try api.call("GET", "/", headers: headers, auth: false).status == 200)
    }

    @Test func cookieFromAnotherPortOfTheSiteIsForbidden() throws {
        let api = try APIFixture()
        defer { api.shutdown() }
        let cookie = try Self.login(api)
        for site in ["same-site", "cross-site"] {
            let put = try api.call("PUT", "/a.json", headers: [("Cookie", cookie), ("Sec-Fetch-Site", site)], body: "1", auth: false)
            #expect(put.status == 403, "\(site)")
            #expect(put.json == ["error": "Permission denied"])
        }
        // Even with the app's own Origin claimed beside it.
        let both = [("Cookie", cookie), ("Origin", "http://127.0.0.1:\(api.port)"), ("Sec-Fetch-Site", "same-site")]
        #expect(try api.call("PUT", "/a.json", headers: both, body: "1", auth: false).status == 403)
        #expect(try api.call("GET", "/a.json").text == "null")
    }

    @Test func cookieFromTheAppsOwnOriginIsAccepted() throws {
        let api = try APIFixture()
        defer { api.shutdown() }
        let cookie = try Self.login(api)
        for (n, origin) in ["http://127.0.0.1:\(api.port)", "http://localhost:\(api.port)"].enumerated() {
            let headers = [("Cookie", cookie), ("Origin", origin), ("Sec-Fetch-Site", "same-origin")]
            let put = try api.call("PUT", "/a\(n).json", headers: headers, body: "\(n)", auth: false)
            #expect(put.status == 200, "\(origin): \(put)")
            #expect(put.header("Access-Control-Allow-Credentials") == nil)
        }
        #expect(try api.call("GET", "/a1.json").text == "1")
        // A GET as the page's fetch and EventSource send it: no Origin, same-origin.
        let get = try api.call("GET", "/a0.json", headers: [("Cookie", cookie), ("Sec-Fetch-Site", "same-origin")], auth: false)
        #expect(get.text == "0")
        // Typed into the address bar.
        #expect(try api.call("GET", "/a0.json", headers: [("Cookie", cookie), ("Sec-Fetch-Site", "none")], auth: false).status == 200)
    }

    @Test func cookieWithNoOriginAtAllIsAccepted() throws {
        let api = try APIFixture()
        defer { api.shutdown() }
        let cookie = try Self.login(api)
        #expect(try api.call("PUT", "/a.json", headers: [("Cookie", cookie)], body: "7", auth: false).status == 200)
        #expect(try api.call("GET", "/a.json", headers: [("Cookie", cookie)], auth: false).text == "7")
        // A cookie that is no session is still no credential.
        #expect(try api.call("GET", "/a.json", headers: [("Cookie", "lanchat_session_\(api.port)=nope")], auth: false).status == 401)
    }

    @Test func tokenFromAForeignOriginIsUnchanged() throws {
        let api = try APIFixture()
        defer { api.shutdown() }
        let headers = [("Origin", Self.foreign(api)), ("Sec-Fetch-Site", "same-site")]
        let put = try api.call("PUT", "/a.json", headers: headers, body: "3", auth: true)
        #expect(put.status == 200)
        #expect(put.header("Access-Control-Allow-Origin") == "*")
        #expect(put.header("Access-Control-Allow-Credentials") == nil)
        #expect(try api.call("GET", "/a.json?auth=\(APIFixture.token)", headers: headers, auth: false).text == "3")
        let preflight = try api.call("OPTIONS", "/a.json", headers: headers, auth: false)
        #expect(preflight.status == 204)
        #expect(preflight.header("Access-Control-Allow-Origin") == "*")
        #expect(preflight.header("Access-Control-Allow-Credentials") == nil)
    }
}
