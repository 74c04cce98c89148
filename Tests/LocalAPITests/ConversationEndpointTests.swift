import Crypto
import Testing
import Tree
import Wire

/// `/.lanchat/conversations`: the summaries a conversation list shows, their live stream, and the
/// read mark the web chat moves as its user reads.
@Suite("Local API: conversation summaries and read marks")
struct ConversationEndpointTests {
    /// A message from another member, arriving as from a peer.
    static func foreign(_ api: APIFixture, _ author: PrivateKey, conversation: String, key: String, text: String, clock: UInt64) throws {
        let value: JSONValue = ["senderId": .string(author.publicKey.userID), "senderName": "Bob", "text": .string(text), "date": 1]
        let record = try Record.make(body: .write([WritePair(path: try Path(segments: ["conversations", conversation, "messages", key]), value: value)]),
                                     clock: clock << 16, signer: author)
        try api.node.write { store, _ in _ = try store.ingest([record], nowMillis: 1_800_000_000_000) }
    }

    @Test("summaries count others' messages after the read mark; the mark moves forward only")
    func summariesAndReadMarks() throws {
        let api = try APIFixture()
        defer { api.shutdown() }
        let bob = PrivateKey()
        let me = api.node.userID
        _ = try api.call("PUT", "/conversations/c/meta/title.json", body: #""Project""#)
        _ = try api.call("PUT", "/conversations/c/messages/k1.json", body: #"{"senderId":"\#(me)","text":"mine"}"#)
        for i in 2...4 { try Self.foreign(api, bob, conversation: "c", key: "k\(i)", text: "from Bob \(i)", clock: 1_700_000_000_000 + UInt64(i)) }

        var summary = try #require(try api.call("GET", "/.lanchat/conversations").json?["c"])
        #expect(summary == ["title": "Project", "lastKey": "k4", "unread": 3,
                            "last": ["senderId": .string(bob.publicKey.userID), "senderName": "Bob", "text": "from Bob 4", "date": 1]])

        let read = try api.call("PUT", "/.lanchat/conversations/c/read", body: #""k3""#)
        #expect(read.status == 200 && read.json == ["readKey": "k3"])
        summary = try #require(try api.call("GET", "/.lanchat/conversations").json?["c"])
        #expect(summary["unread"] == 1 && summary["readKey"] == "k3")
        // Another tab that read less does not move it back.
        #expect(try api.call("PUT", "/.lanchat/conversations/c/read", body: #""k2""#).json == ["readKey": "k3"])

        // Refused, changing nothing: not a key, not a string, too large, other methods and paths.
        #expect(try api.call("PUT", "/.lanchat/conversations/c/read", body: #""a/b""#).status == 400)
        #expect(try api.call("PUT", "/.lanchat/conversations/c/read", body: #"{"key":"k4"}"#).status == 400)
        #expect(try api.call("PUT", "/.lanchat/conversations/c/read", body: "\"" + String(repeating: "k", count: 2_000) + "\"").status == 413)
        #expect(try api.call("DELETE", "/.lanchat/conversations/c/read").status == 405)
        #expect(try api.call("POST", "/.lanchat/conversations", body: "{}").status == 405)
        #expect(try api.call("GET", "/.lanchat/conversations/c/other").status == 404)
        #expect(try api.call("GET", "/.lanchat/conversations", auth: false).status == 401)
        #expect(try api.call("PUT", "/.lanchat/conversations/c/read", body: #""k4""#, auth: false).status == 401)
        #expect(try api.call("GET", "/.lanchat/conversations").json?["c"]?["readKey"] == "k3")
    }

    @Test("the stream sends a conversation's new summary when a message arrives and when it is read")
    func liveSummaries() throws {
        let api = try APIFixture()
        defer { api.shutdown() }
        let bob = PrivateKey()
        try Self.foreign(api, bob, conversation: "c", key: "k1", text: "hello", clock: 1_700_000_000_001)
        let listener = try api.client()
        #expect(try listener.openStream("/.lanchat/conversations").status == 200)
        let first = try listener.nextEvent()
        #expect(first.name == "put" && first.path == "/" && first.value?["c"]?["unread"] == 1)

        try Self.foreign(api, bob, conversation: "c", key: "k2", text: "again", clock: 1_700_000_000_002)
        var event = try listener.nextChange()
        #expect(event.path == "/c" && event.value?["unread"] == 2 && event.value?["lastKey"] == "k2")

        _ = try api.call("PUT", "/.lanchat/conversations/c/read", body: #""k2""#)
        event = try listener.nextChange()
        #expect(event.path == "/c" && event.value?["unread"] == 0 && event.value?["readKey"] == "k2")

        // Another conversation appears under its own id; a write over all of them sends the list whole.
        try Self.foreign(api, bob, conversation: "d", key: "k1", text: "new", clock: 1_700_000_000_003)
        event = try listener.nextChange()
        #expect(event.path == "/d" && event.value?["unread"] == 1)
        _ = try api.call("PATCH", "/conversations.json", body: #"{"e/meta/title":"Third"}"#)
        event = try listener.nextChange()
        #expect(event.path == "/e" && event.value == ["title": "Third", "unread": 0])
        _ = try api.call("PUT", "/conversations.json", body: #"{"f":{"meta":{"title":"Fourth"}}}"#)
        event = try listener.nextChange()
        #expect(event.path == "/" && event.value?["f"]?["title"] == "Fourth" && event.value?["c"]?["lastKey"] == "k2")
    }
}
