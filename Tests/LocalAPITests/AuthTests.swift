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
