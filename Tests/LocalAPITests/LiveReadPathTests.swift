import Foundation
@testable import LocalAPI
import Realtime
import Store
import Testing
import Tree

/// Every way a client reads the tree shows the live layer over it (Protocol.md §5.7): a large
/// GET streamed from a snapshot, a query GET, a query's event stream, and the websocket
/// protocol's gets and listens, plain and with a query. Each is compared with what a plain read
/// of a small location shows, so a read path that skipped the overlay would show no
/// `typingIndicator` and fail.
@Suite("Local API: live values on every read path", .serialized)
struct LiveReadPathTests {
    /// A node whose conversation `c` holds more messages than a read takes whole (so reads of it
    /// are streamed), a small conversation `d`, and its user typing in both.
    static func fixture() throws -> (APIFixture, String) {
        let api = try APIFixture()
        let uid = api.node.userID
        // In writes of ten, as a chat's messages come: a message is read from its own record.
        for batch in 0..<30 {
            var messages: [String] = []
            for index in batch * 10..<batch * 10 + 10 {
                messages.append(#""m\#(1000 + index)":\#(QueryStreamingTests.message(uid, "t\(index)", date: index))"#)
            }
            #expect(try api.call("PATCH", "/conversations/c/messages.json", body: "{" + messages.joined(separator: ",") + "}").status == 200)
        }
        #expect(try api.call("PUT", "/conversations/d/messages/m1.json", body: QueryStreamingTests.message(uid, "hi", date: 1)).status == 200)
        for conversation in ["c", "d"] {
            #expect(try api.call("PUT", "/conversations/\(conversation)/typingIndicator/\(uid).json", body: "true").status == 200)
        }
        return (api, uid)
    }

    /// The value at `path` read whole, with the live layer (the reference).
    static func whole(_ api: APIFixture, _ path: String) throws -> JSONValue {
        try api.node.queue.sync { try TreeAccess(node: api.node).value(at: Path(path)) }
    }

    @Test("a large GET, streamed from a snapshot, shows the typing flags; its ETag is that of what it shows")
    func streamedGet() throws {
        let (api, uid) = try Self.fixture()
        defer { api.shutdown() }
        let isLarge = try api.node.queue.sync {
            try api.node.withStoreOnQueue { store, _ in try store.isLargeValue(at: Path("/conversations/c")) }
        }
        #expect(isLarge)
        for path in ["/conversations/c", "/conversations"] {
            let reply = try api.call("GET", path + ".json", headers: [("X-Firebase-ETag", "true")])
            #expect(reply.header("Transfer-Encoding") == "chunked")
            let shown = try #require(reply.json)
            #expect(shown == (try Self.whole(api, path)))
            let flag = path == "/conversations" ? shown.objectValue?["c"]?.objectValue?["typingIndicator"] : shown.objectValue?["typingIndicator"]
            #expect(flag == .object([uid: .bool(true)]))
            #expect(shown.objectValue?["messages"]?.objectValue?.count ?? shown.objectValue?["c"]?.objectValue?["messages"]?.objectValue?.count == 300)
            #expect(reply.header("ETag") == firebaseETag(of: shown))
        }
        // Cleared, it is gone from the streamed read too.
        _ = try api.call("DELETE", "/conversations/c/typingIndicator/\(uid).json")
        let cleared = try #require(try api.call("GET", "/conversations/c.json").json)
        #expect(cleared.objectValue?["typingIndicator"] == nil && cleared.objectValue?["messages"] != nil)
    }

    @Test("a query GET shows the live values in its window, and a wholly live child can enter it")
    func queryGet() throws {
        let (api, uid) = try Self.fixture()
        defer { api.shutdown() }
        let typing: JSONValue = .object([uid: .bool(true)])
        let last = try api.call("GET", "/conversations/c.json?orderBy=%22$key%22&limitToLast=1").json
        #expect(last == .object(["typingIndicator": typing]))
        let first = try api.call("GET", "/conversations/d.json?orderBy=%22$key%22&limitToFirst=1").json
        #expect(first == .object(["messages": (try Self.whole(api, "/conversations/d/messages"))]))
        let one = try api.call("GET", "/conversations.json?orderBy=%22$key%22&equalTo=%22d%22").json
        #expect(one == .object(["d": try Self.whole(api, "/conversations/d")]))
        #expect(one?.objectValue?["d"]?.objectValue?["typingIndicator"] == typing)
        // A live value below a child outside the window does not bring it in.
        let messages = try api.call("GET", "/conversations/c/messages.json?orderBy=%22$key%22&limitToLast=2").json
        #expect(messages?.objectValue.map { Set($0.keys) } == ["m1298", "m1299"])
    }

    @Test("a query's event stream shows the live values in its window and follows their changes")
    func queryStream() throws {
        let (api, uid) = try Self.fixture()
        defer { api.shutdown() }
        let listener = try api.client()
        #expect(try listener.openStream("/conversations/d.json?orderBy=%22$key%22&limitToLast=1").status == 200)
        #expect(try listener.nextEvent().json == ["path": "/", "data": ["typingIndicator": .object([uid: .bool(true)])]])
        _ = try api.call("DELETE", "/conversations/d/typingIndicator/\(uid).json")
        let change = try listener.nextChange()
        let messages = try Self.whole(api, "/conversations/d/messages")
        #expect(change.json == ["path": "/", "data": ["typingIndicator": nil, "messages": messages]])
        _ = try api.call("PUT", "/conversations/d/typingIndicator/\(uid).json", body: "true")
        let back = try listener.nextChange()
        #expect(back.json == ["path": "/", "data": ["typingIndicator": .object([uid: .bool(true)]), "messages": nil]])
    }

    @Test("the websocket protocol's gets and listens, plain and with a query, show the live values")
    func websocket() throws {
        let (api, uid) = try Self.fixture()
        defer { api.shutdown() }
        let client = try RealtimeClient(api)
        _ = try client.message()
        _ = try client.request("gauth", .object(["cred": .string(APIFixture.token)]))
        let typing: JSONValue = .object([uid: .bool(true)])
        let plain = try client.request("g", ["p": "/conversations/d"])
        #expect(plain.objectValue?["d"] == (try Self.whole(api, "/conversations/d")))
        let query: JSONValue = ["i": ".key", "l": 1, "vf": "r"]
        let windowed = try client.request("g", ["p": "/conversations/d", "q": query])
        #expect(windowed.objectValue?["d"] == .object(["typingIndicator": typing]))
        let large = try client.request("g", ["p": "/conversations/c", "q": query])
        #expect(large.objectValue?["d"] == .object(["typingIndicator": typing]))

        var pushes: [JSONValue] = []
        #expect(realtimeStatus(try client.request("q", ["p": "/conversations/d", "h": ""], pushes: &pushes)) == "ok")
        #expect(pushes.last?.objectValue?["d"]?.objectValue?["b"]?.objectValue?["d"] == (try Self.whole(api, "/conversations/d")))
        pushes = []
        #expect(realtimeStatus(try client.request("q", ["p": "/conversations/d", "q": query, "t": 1, "h": ""], pushes: &pushes)) == "ok")
        #expect(pushes.last?.objectValue?["d"]?.objectValue?["b"]?.objectValue?["d"] == .object(["typingIndicator": typing]))

        // Cleared over REST: the plain listen gets the flag's path, the query its new window.
        _ = try api.call("DELETE", "/conversations/d/typingIndicator/\(uid).json")
        var data: [JSONValue] = []
        for _ in 0..<2 { if let b = try client.message().objectValue?["d"]?.objectValue?["b"] { data.append(b) } }
        let messages = try Self.whole(api, "/conversations/d/messages")
        #expect(data.contains { $0.objectValue?["t"] == 1 && $0.objectValue?["d"] == .object(["messages": messages]) })
        #expect(data.contains { $0.objectValue?["t"] == nil && $0.objectValue?["d"] == .null })
    }

    @Test("a shallow GET shows the children the live values make, as a shallow view of the whole read")
    func shallowGet() throws {
        let (api, uid) = try Self.fixture()
        defer { api.shutdown() }
        // A conversation that holds nothing but a typing flag, and a receipt in another.
        #expect(try api.call("PUT", "/conversations/e/typingIndicator/\(uid).json", body: "true").status == 200)
        #expect(try api.call("PUT", "/conversations/d/readReceipts/\(uid).json", body: "\"m1\"").status == 200)
        let paths = ["/", "/conversations", "/conversations/d", "/conversations/e", "/conversations/d/typingIndicator",
                     "/conversations/d/typingIndicator/\(uid)", "/conversations/d/readReceipts", "/conversations/c/messages"]
        for path in paths {
            let reply = try api.call("GET", (path == "/" ? "/.json" : path + ".json") + "?shallow=true")
            #expect(reply.status == 200)
            let expected = shallow(try Self.whole(api, path))
            #expect(reply.json == expected, "shallow read of \(path): \(reply.text) vs \(expected)")
        }
        #expect(try api.call("GET", "/conversations.json?shallow=true").json == ["c": true, "d": true, "e": true])
        #expect(try api.call("GET", "/conversations/d.json?shallow=true").json == ["messages": true, "typingIndicator": true, "readReceipts": true])
        #expect(try api.call("GET", "/conversations/d/readReceipts.json?shallow=true").json == .object([uid: true]))
        // Cleared, the conversation that held only the flag is gone from the shallow read too.
        _ = try api.call("DELETE", "/conversations/e/typingIndicator/\(uid).json")
        #expect(try api.call("GET", "/conversations.json?shallow=true").json == ["c": true, "d": true])
    }
}
