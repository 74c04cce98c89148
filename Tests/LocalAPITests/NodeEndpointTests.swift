import Testing
import Tree

@Suite("Local API: node endpoints")
struct NodeEndpointTests {
    @Test func status() throws {
        let api = try APIFixture()
        defer { api.shutdown() }
        _ = try api.call("PUT", "/x.json", body: "1")
        let reply = try api.call("GET", "/.lanchat/status")
        #expect(reply.status == 200)
        #expect(reply.header("Content-Type") == "application/json; charset=utf-8")
        let status = try #require(reply.json)
        #expect(status["userId"] == .string(api.node.userID))
        #expect(status["records"] == 1)
        #expect(status["listen"]?.stringValue == api.node.listenAddress.description)
        #expect(status["peers"] == [])
        #expect(status["fingerprint"]?.stringValue?.isEmpty == false)
    }

    @Test func peers() throws {
        let api = try APIFixture()
        defer { api.shutdown() }
        let reply = try api.call("GET", "/.lanchat/peers")
        #expect(reply.status == 200)
        #expect(reply.json == [])
    }

    @Test func unknownEndpointAndMethod() throws {
        let api = try APIFixture()
        defer { api.shutdown() }
        #expect(try api.call("GET", "/.lanchat/nothing").status == 404)
        #expect(try api.call("GET", "/.lanchat").status == 404)
        #expect(try api.call("POST", "/.lanchat/status", body: "{}").status == 405)
        // No data path can reach the prefix: ".lanchat" is not a valid key.
        #expect(try api.call("PUT", "/.lanchat/status.json", body: "1").status != 200)
        #expect(try api.call("PUT", "/.lanchat.json", body: "1").status == 400)
    }
}
