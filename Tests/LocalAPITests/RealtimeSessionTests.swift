import Foundation
@testable import LocalAPI
import Realtime
import Testing
import Tree
import WebSocket

/// A websocket client of the Realtime Database protocol over a raw socket: masked frames out,
/// the node's frames (whole protocol messages, joined when split) in.
final class RealtimeClient {
    let raw: RawClient
    private var next = 0

    init(raw: RawClient) {
        self.raw = raw
    }

    convenience init(_ api: APIFixture, timeoutSeconds: Int = 10) throws {
        try self.init(port: api.port, timeoutSeconds: timeoutSeconds)
    }

    /// A websocket session with the local API listening on `port`; a read that waits longer
    /// than `timeoutSeconds` fails the test.
    init(port: UInt16, timeoutSeconds: Int = 10) throws {
        raw = try RawClient(port: port, timeoutSeconds: timeoutSeconds)
        try raw.send(RawClient.request("GET", "/.ws?v=5&ns=lanchat", headers: [
            ("Upgrade", "websocket"), ("Connection", "Upgrade"), ("Sec-WebSocket-Version", "13"),
            ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="),
        ], auth: false))
        let head = try raw.readHead()
        guard head.status == 101 else { throw ClientError("handshake answered \(head.status)") }
    }

    /// One frame from the node: its opcode and payload.
    func frame() throws -> (opcode: UInt8, payload: [UInt8]) {
        let header = try raw.readBytes(2)
        var length = Int(header[1] & 0x7F)
        if length == 126 {
            let b = try raw.readBytes(2)
            length = Int(b[0]) << 8 | Int(b[1])
        } else if length == 127 {
            length = try raw.readBytes(8).reduce(0) { $0 << 8 | Int($1) }
        }
        return (header[0] & 0x0F, try raw.readBytes(length))
    }

    /// The next protocol message (pieces of a split one joined).
    func message() throws -> JSONValue {
        var assembler = RealtimeFrameAssembler(maxMessageBytes: 64 << 20)
        while true {
            let (opcode, payload) = try frame()
            guard opcode == 1 else { throw ClientError("frame with opcode \(opcode)") }
            if let whole = try assembler.receive(payload) { return try JSONValue.parse(whole) }
        }
    }

    func sendText(_ text: String) throws {
        for piece in RealtimeFrames.split(text) {
            try raw.send(WebSocketFrameWriter.frame(.text, Array(piece.utf8), mask: [1, 2, 3, 4]))
        }
    }

    /// Sends a request and returns its answer's body, keeping any push that came first.
    func request(_ action: String, _ body: JSONValue, pushes: inout [JSONValue]) throws -> JSONValue {
        next += 1
        try sendText(JSONValue.object(["t": "d", "d": .object(["r": .number(Double(next)), "a": .string(action), "b": body])]).serialized())
        while true {
            let reply = try message()
            guard case let .object(d)? = reply.objectValue?["d"] else { continue }
            if d["r"] == .number(Double(next)) { return d["b"] ?? .null }
            pushes.append(reply)
        }
    }

    func request(_ action: String, _ body: JSONValue) throws -> JSONValue {
        var ignored: [JSONValue] = []
        return try request(action, body, pushes: &ignored)
    }
}

func realtimeStatus(_ body: JSONValue) -> String? { body.objectValue?["s"]?.stringValue }

@Suite("Local API: the Realtime Database websocket protocol")
struct RealtimeSessionTests {
    @Test func helloThenNothingWithoutTheToken() throws {
        let api = try APIFixture()
        defer { api.shutdown() }
        let client = try RealtimeClient(api)
        let hello = try client.message()
        let data = hello.objectValue?["d"]?.objectValue?["d"]?.objectValue
        #expect(hello.objectValue?["t"] == "c" && data?["v"] == "5" && data?["s"]?.stringValue?.isEmpty == false)
        #expect(realtimeStatus(try client.request("p", ["p": "/a", "d": 1])) == "permission_denied")
        #expect(realtimeStatus(try client.request("gauth", ["cred": "nope"])) == "invalid_token")
        #expect(try api.call("GET", "/a.json").body == Array("null".utf8))
        #expect(realtimeStatus(try client.request("gauth", .object(["cred": .string(APIFixture.token)]))) == "ok")
        #expect(realtimeStatus(try client.request("p", ["p": "/a", "d": ["b": 1]])) == "ok")
        #expect(try client.request("g", ["p": "a/b"]) == ["s": "ok", "d": 1])
        #expect(try api.call("GET", "/a.json").body == Array(#"{"b":1}"#.utf8))
    }

    @Test func aListenGetsItsDataThenChangesMadeOverREST() throws {
        let api = try APIFixture()
        defer { api.shutdown() }
        let client = try RealtimeClient(api)
        _ = try client.message()
        _ = try client.request("gauth", .object(["cred": .string(APIFixture.token)]))
        _ = try api.call("PUT", "/room.json", body: #"{"n":1}"#)
        var pushes: [JSONValue] = []
        #expect(realtimeStatus(try client.request("q", ["p": "/room", "h": ""], pushes: &pushes)) == "ok")
        #expect(pushes == [RealtimeReply.data(try Path("room"), ["n": 1], tag: nil)])
        _ = try api.call("PUT", "/room/n.json", body: "2")
        #expect(try client.message() == RealtimeReply.data(try Path("room/n"), 2, tag: nil))
        // A transaction's write with a stale hash changes nothing.
        let stale = try client.request("p", .object(["p": "/room/n", "d": 3, "h": .string(RealtimeHash.of(1))]))
        #expect(realtimeStatus(stale) == "datastale")
        let fresh = try client.request("p", .object(["p": "/room/n", "d": 3, "h": .string(RealtimeHash.of(2))]), pushes: &pushes)
        #expect(realtimeStatus(fresh) == "ok")
        #expect(try api.call("GET", "/room/n.json").body == Array("3".utf8))
    }

    @Test func onDisconnectIsMadeWhenTheSocketDropsWithoutAClose() throws {
        let api = try APIFixture()
        defer { api.shutdown() }
        let client = try RealtimeClient(api)
        _ = try client.message()
        _ = try client.request("gauth", .object(["cred": .string(APIFixture.token)]))
        #expect(realtimeStatus(try client.request("o", ["p": "/connections/me", "d": "offline"])) == "ok")
        #expect(realtimeStatus(try client.request("o", ["p": "/connections/cancelled", "d": "x"])) == "ok")
        #expect(realtimeStatus(try client.request("oc", ["p": "/connections/cancelled", "d": .null])) == "ok")
        #expect(try api.call("GET", "/connections.json").body == Array("null".utf8))
        client.raw.close()
        let deadline = Date().addingTimeInterval(10)
        var seen = ""
        while Date() < deadline {
            seen = String(decoding: try api.call("GET", "/connections.json").body, as: UTF8.self)
            if seen != "null" { break }
            usleep(20_000)
        }
        #expect(seen == #"{"me":"offline"}"#)
    }

    @Test func framesSentWithTheHandshakeAreRead() throws {
        let api = try APIFixture()
        defer { api.shutdown() }
        let raw = try api.client()
        let ping = WebSocketFrameWriter.frame(.text, Array(#"{"t":"c","d":{"t":"p","d":{}}}"#.utf8), mask: [9, 8, 7, 6])
        try raw.send(RawClient.request("GET", "/.ws?v=5&ns=lanchat", headers: [
            ("Upgrade", "websocket"), ("Connection", "Upgrade"), ("Sec-WebSocket-Version", "13"),
            ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="),
        ], auth: false) + ping)
        #expect(try raw.readHead().status == 101)
        let client = RealtimeClient(raw: raw)
        #expect(try client.message().objectValue?["d"]?.objectValue?["t"] == "h")
        #expect(try client.message() == RealtimeReply.pong)
    }

    @Test func aBadHandshakeIsRefusedAndTheConnectionClosed() throws {
        let api = try APIFixture()
        defer { api.shutdown() }
        let raw = try api.client()
        try raw.send(RawClient.request("GET", "/.ws?v=5", headers: [
            ("Upgrade", "websocket"), ("Connection", "Upgrade"), ("Sec-WebSocket-Version", "8"),
            ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="),
        ], auth: false))
        let reply = try raw.readResponse()
        #expect(reply.status == 426 && reply.header("Sec-WebSocket-Version") == "13")
        #expect(raw.isClosedByServer())
    }

    @Test func clientsAreHeldToSmallMessagesUntilTheyAuthenticate() throws {
        let api = try APIFixture()
        defer { api.shutdown() }
        let big = String(repeating: "é", count: 50_000)  // 100 KB of UTF-8, in 4 pieces
        let body = JSONValue.object(["p": "/big", "d": .string(big)])
        let anonymous = try RealtimeClient(api)
        _ = try anonymous.message()
        try anonymous.sendText(JSONValue.object(["t": "d", "d": .object(["r": 1, "a": "p", "b": body])]).serialized())
        let close = try anonymous.frame()
        #expect(close.opcode == 8 && Array(close.payload.prefix(2)) == [0x03, 0xF1])
        let owner = try RealtimeClient(api)
        _ = try owner.message()
        _ = try owner.request("gauth", .object(["cred": .string(APIFixture.token)]))
        #expect(realtimeStatus(try owner.request("p", body)) == "ok")
        #expect(try owner.request("g", ["p": "/big"]) == ["s": "ok", "d": .string(big)])
    }

    @Test func framingViolationsCloseTheConnectionWithTheirCode() throws {
        let api = try APIFixture()
        defer { api.shutdown() }
        // An unmasked frame: 1002.
        let unmasked = try RealtimeClient(api)
        _ = try unmasked.message()
        try unmasked.raw.send(WebSocketFrameWriter.text("{}"))
        let close = try unmasked.frame()
        #expect(close.opcode == 8 && Array(close.payload.prefix(2)) == [0x03, 0xEA])
        #expect(unmasked.raw.isClosedByServer())
        // A frame announcing more than the bound: 1009, before its payload is sent.
        let huge = try RealtimeClient(api)
        _ = try huge.message()
        try huge.raw.send([0x81, 0xFF, 0, 0, 0, 0, 0x10, 0, 0, 0, 1, 2, 3, 4])
        let tooBig = try huge.frame()
        #expect(tooBig.opcode == 8 && Array(tooBig.payload.prefix(2)) == [0x03, 0xF1])
        // Not a protocol message: a shutdown, then 1008.
        let garbage = try RealtimeClient(api)
        _ = try garbage.message()
        try garbage.sendText("[1,2]")
        #expect(try garbage.message().objectValue?["d"]?.objectValue?["t"] == "s")
        let policy = try garbage.frame()
        #expect(policy.opcode == 8 && Array(policy.payload.prefix(2)) == [0x03, 0xF0])
        // The node still serves everyone else.
        #expect(try api.call("GET", "/.json").status == 200)
    }
}
