import Foundation
@testable import LocalAPI
import Testing
import Tree
import Crypto
import Wire

@Suite("Local API: streaming (server-sent events)")
struct StreamingTests {
    static func header(_ headers: [(name: String, value: String)], _ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    @Test func streamHeadAndInitialPut() throws {
        let api = try APIFixture()
        defer { api.shutdown() }
        _ = try api.call("PUT", "/room.json", body: #"{"topic":"Xin chào","n":1}"#)
        let listener = try api.client()
        let head = try listener.openStream("/room.json?ns=db")
        #expect(head.status == 200)
        #expect(Self.header(head.headers, "Content-Type") == "text/event-stream; charset=utf-8")
        #expect(Self.header(head.headers, "Transfer-Encoding") == "chunked")
        #expect(Self.header(head.headers, "Cache-Control") == "no-cache")
        #expect(Self.header(head.headers, "Access-Control-Allow-Origin") == "*")
        #expect(Self.header(head.headers, "Content-Length") == nil)
        let first = try listener.nextEvent()
        #expect(first.name == "put")
        #expect(first.json == ["path": "/", "data": ["topic": "Xin chào", "n": 1]])

        let empty = try api.client()
        _ = try empty.openStream("/nothing/here.json")
        #expect(try empty.nextEvent().json == ["path": "/", "data": nil])
        let root = try api.client()
        _ = try root.openStream("/.json")
        #expect(try root.nextEvent().json == ["path": "/", "data": ["room": ["topic": "Xin chào", "n": 1]]])
    }

    @Test("a pair that makes a message disputed takes the whole message away from listeners")
    func disputedMessageLeavesListenersWhole() throws {
        let api = try APIFixture()
        defer { api.shutdown() }
        let listener = try api.client()
        _ = try listener.openStream("/conversations/c/messages.json")
        #expect(try listener.nextEvent().json == ["path": "/", "data": nil])
        // A message at a key bound to nobody, as an SDK client would name it.
        let uid = api.node.userID
        _ = try api.call("PUT", "/conversations/c/messages/m.json", body: #"{"senderId":"\#(uid)","text":"hi"}"#)
        #expect(try listener.nextChange().json == ["path": "/m", "data": ["senderId": .string(uid), "text": "hi"]])
        // An edit is the message whole.
        _ = try api.call("PUT", "/conversations/c/messages/m/text.json", body: #""hi!""#)
        #expect(try listener.nextChange().json == ["path": "/m", "data": ["senderId": .string(uid), "text": "hi!"]])
        // Another member claims the key from a peer: the message is disputed and shows nothing,
        // so the listener must drop it whole, not only the field that member wrote.
        let other = PrivateKey()
        let claim = try Record.make(body: .write([WritePair(path: try Path("/conversations/c/messages/m/text"), value: "mine")]),
                                    clock: 1 << 16, signer: other)
        try api.node.write { store, _ in _ = try store.ingest([claim], nowMillis: 1_800_000_000_000) }
        #expect(try listener.nextChange().json == ["path": "/m", "data": nil])
    }

    @Test func anHTTP10ClientGetsBareEventsUntilTheConnectionCloses() throws {
        let api = try APIFixture()
        defer { api.shutdown() }
        let listener = try api.client()
        try listener.send("GET /old.json HTTP/1.0\r\nAccept: text/event-stream\r\nAuthorization: Bearer \(APIFixture.token)\r\n\r\n")
        let head = try listener.readHead()
        #expect(head.status == 200)
        #expect(Self.header(head.headers, "Transfer-Encoding") == nil)
        #expect(Self.header(head.headers, "Content-Length") == nil)
        #expect(Self.header(head.headers, "Connection") == "close")
        #expect(try listener.readBareEvent() == "event: put\ndata: {\"data\":null,\"path\":\"/\"}\n\n")
        _ = try api.call("PUT", "/old.json", body: #"{"a":1}"#)
        #expect(try listener.readBareEvent() == "event: put\ndata: {\"data\":{\"a\":1},\"path\":\"/\"}\n\n")
    }

    @Test func writesBelowTheListenerArriveAsRelativePuts() throws {
        let api = try APIFixture()
        defer { api.shutdown() }
        let listener = try api.client()
        _ = try listener.openStream("/s.json")
        #expect(try listener.nextEvent().json == ["path": "/", "data": nil])

        _ = try api.call("PUT", "/s/a/b.json", body: "1")
        let put = try listener.nextChange()
        #expect(put.name == "put")
        #expect(put.json == ["path": "/a/b", "data": 1])

        // A write at the listener's own path, and one above it.
        _ = try api.call("PUT", "/s.json", body: #"{"x":true}"#)
        #expect(try listener.nextChange().json == ["path": "/", "data": ["x": true]])
        _ = try api.call("PATCH", "/.json", body: #"{"s/y":2}"#)
        #expect(try listener.nextChange().json == ["path": "/y", "data": 2])
        _ = try api.call("PUT", "/.json", body: #"{"s":{"z":3},"other":1}"#)
        #expect(try listener.nextChange().json == ["path": "/", "data": ["z": 3]])

        // Deletion is a put of null.
        _ = try api.call("DELETE", "/s/z.json")
        #expect(try listener.nextChange().json == ["path": "/z", "data": nil])

        // Writes elsewhere give nothing: the next event is the marker.
        _ = try api.call("PUT", "/other.json", body: "2")
        _ = try api.call("PUT", "/s2.json", body: "2")
        _ = try api.call("PUT", "/s/marker.json", body: #""m""#)
        #expect(try listener.nextChange().json == ["path": "/marker", "data": "m"])
    }

    @Test func aPushIsExactlyOnePut() throws {
        let api = try APIFixture()
        defer { api.shutdown() }
        let listener = try api.client()
        _ = try listener.openStream("/chat.json")
        _ = try listener.nextEvent()
        let post = try api.call("POST", "/chat.json", body: #"{"text":"hi"}"#)
        let name = try #require(post.json?["name"]?.stringValue)
        let event = try listener.nextChange()
        #expect(event.name == "put")
        #expect(event.json == ["path": .string("/" + name), "data": ["text": "hi"]])
        // Nothing else came for that push: the next event is the next write.
        _ = try api.call("PUT", "/chat/marker.json", body: "1")
        #expect(try listener.nextChange().path == "/marker")
    }

    @Test func aWriteThroughTheNodeIsAnEvent() throws {
        let api = try APIFixture()
        defer { api.shutdown() }
        let listener = try api.client()
        _ = try listener.openStream("/direct.json")
        _ = try listener.nextEvent()
        let path = try Path("/direct/from/node")
        try api.node.write { store, key in
            try store.set(path, to: ["via": "node.write"], signer: key, nowMillis: UInt64(Date().timeIntervalSince1970 * 1000))
        }
        #expect(try listener.nextChange().json == ["path": "/from/node", "data": ["via": "node.write"]])
    }

    @Test func eventFramingIsLFOnlyInChunks() throws {
        let api = try APIFixture()
        defer { api.shutdown() }
        let listener = try api.client()
        _ = try listener.openStream("/f.json")
        _ = try listener.nextEvent()
        _ = try api.call("PUT", "/f/text.json", body: #""line1\nline2\r\nend""#)
        _ = try api.call("PATCH", "/f.json", body: #"{"a":1,"b":{"c":null}}"#)
        let text = try listener.nextChange()
        #expect(text.value == "line1\nline2\r\nend")
        _ = try listener.nextChange()
        #expect(listener.streamChunks.count >= 3)
        for chunk in listener.streamChunks {
            let event = String(decoding: chunk, as: UTF8.self)
            #expect(!chunk.contains(0x0D), "\(event.debugDescription)")
            let lines = event.split(separator: "\n", omittingEmptySubsequences: false)
            #expect(lines.count == 4, "\(event.debugDescription)")
            #expect(lines[0].hasPrefix("event: "))
            #expect(lines[1].hasPrefix("data: "))
            #expect((try? JSONValue.parse(String(lines[1].dropFirst(6)))) != nil)
            #expect(lines[2].isEmpty && lines[3].isEmpty)
        }
    }

    @Test func manyListenersEachGetEveryEvent() throws {
        let api = try APIFixture()
        defer { api.shutdown() }
        let listeners = try (0..<20).map { _ in try api.client() }
        for listener in listeners {
            _ = try listener.openStream("/m.json")
            _ = try listener.nextEvent()
        }
        for i in 0..<5 { _ = try api.call("PUT", "/m/k\(i).json", body: "\(i)") }
        for listener in listeners {
            for i in 0..<5 { #expect(try listener.nextChange().json == ["path": .string("/k\(i)"), "data": .number(Double(i))]) }
        }
        // A listener that leaves does not disturb the others.
        listeners[0].close()
        _ = try api.call("PUT", "/m/after.json", body: "1")
        for listener in listeners.dropFirst() { #expect(try listener.nextChange().path == "/after") }
    }

    @Test func aSlowListenerIsClosedWithoutHurtingOthers() throws {
        let api = try APIFixture()
        defer { api.shutdown() }
        let maxWrites = 64
        let value = "\"" + String(repeating: "v", count: 256 * 1024) + "\""

        // Never reads, with a small receive window so the node's queue for it fills.
        let slow = try api.client(receiveBuffer: 4096)
        try slow.send(RawClient.request("GET", "/big.json", headers: [("Accept", "text/event-stream")]))
        let fast = try api.client()
        _ = try fast.openStream("/big.json")
        _ = try fast.nextEvent()
        // Both are registered now: the stream requests were handled in order on the node's queue.
        let hub = api.api.events
        #expect(api.node.queue.sync { hub.listenerCount } == 2)

        let finished = DispatchSemaphore(value: 0)
        let received = LockedList()
        let fastBox = UncheckedBox(fast)
        Thread.detachNewThread {
            do {
                while true {
                    let path = try fastBox.value.nextChange().path ?? "?"
                    received.append(path)
                    if path == "/done" { break }
                }
            } catch {
                received.append("error: \(error)")
            }
            finished.signal()
        }

        // Write until the node gives up on the slow listener, then a little more.
        let writer = try api.client()
        var written = 0
        var droppedAfter: Int?
        while written < maxWrites, droppedAfter.map({ written < $0 + 3 }) ?? true {
            try writer.send(RawClient.request("PUT", "/big/w\(written).json?print=silent", body: value))
            #expect(try writer.readResponse().status == 204)
            written += 1
            if droppedAfter == nil, api.node.queue.sync(execute: { hub.listenerCount }) == 1 { droppedAfter = written }
        }
        let dropped = try #require(droppedAfter, "the slow listener was never closed")
        // The bound is 4 MiB beyond what the kernel buffers; far less than everything written.
        #expect(dropped * value.utf8.count > EventHub.maxPendingBytes)

        try writer.send(RawClient.request("PUT", "/big/done.json", body: "true"))
        #expect(try writer.readResponse().status == 200)
        #expect(finished.wait(timeout: .now() + 30) == .success)
        #expect(received.items == (0..<written).map { "/w\($0)" } + ["/done"])

        // The slow one was cut off: its stream ends (no terminating chunk) with most data unsent.
        let got = try slow.readToEnd()
        #expect(got.count < written * value.utf8.count / 2, "\(got.count) bytes")

        // Normal requests and new listeners still work.
        try writer.send(RawClient.request("GET", "/big/w0.json?shallow=true"))
        #expect(try writer.readResponse().status == 200)
        let late = try api.client()
        _ = try late.openStream("/big/w1.json")
        #expect(try late.nextEvent().value?.stringValue?.count == 256 * 1024)
        #expect(api.node.queue.sync { hub.listenerCount } == 2)
    }

    @Test func pipelinedBytesAfterAStreamRequestAreIgnored() throws {
        let api = try APIFixture()
        defer { api.shutdown() }
        let listener = try api.client()
        var bytes = RawClient.request("GET", "/q.json", headers: [("Accept", "text/event-stream")])
        bytes += RawClient.request("PUT", "/q.json", body: "1")
        try listener.send(bytes)
        let head = try listener.readHead()
        #expect(head.status == 200)
        #expect(try listener.nextEvent().json == ["path": "/", "data": nil])
        _ = try api.call("PUT", "/q/a.json", body: "2")
        #expect(try listener.nextChange().json == ["path": "/a", "data": 2])
    }

    @Test func streamRefusals() throws {
        let api = try APIFixture()
        defer { api.shutdown() }
        let bad = try api.client()
        #expect(try bad.openStream("/a$b.json").status == 400)
        let notJSON = try api.client()
        #expect(try notJSON.openStream("/a").status == 404)
    }
}

struct UncheckedBox<T>: @unchecked Sendable {
    let value: T
    init(_ value: T) { self.value = value }
}
