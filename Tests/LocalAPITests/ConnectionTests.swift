import Foundation
import Testing
import Tree

@Suite("Local API: connections")
struct ConnectionTests {
    @Test func keepAlive() throws {
        let api = try APIFixture()
        defer { api.shutdown() }
        let client = try api.client()
        for i in 0..<5 {
            try client.send(RawClient.request("PUT", "/k.json", body: "\(i)"))
            let put = try client.readResponse()
            #expect(put.status == 200)
            #expect(put.header("Connection") == "keep-alive")
            try client.send(RawClient.request("GET", "/k.json"))
            let get = try client.readResponse()
            #expect(get.text == "\(i)")
        }
    }

    @Test func pipelinedRequestsAreAnsweredInOrder() throws {
        let api = try APIFixture()
        defer { api.shutdown() }
        let client = try api.client()
        var batch: [UInt8] = []
        batch += RawClient.request("PUT", "/p.json", body: #"{"n":1}"#)
        batch += RawClient.request("GET", "/p/n.json")
        batch += RawClient.request("PATCH", "/p.json", body: #"{"n":2}"#)
        batch += RawClient.request("GET", "/p.json", headers: [("if-none-match", firebaseETag(of: ["n": 2]))])
        batch += RawClient.request("GET", "/missing")
        batch += RawClient.request("DELETE", "/p.json")
        batch += RawClient.request("GET", "/p.json")
        try client.send(batch)
        let replies = try (0..<7).map { _ in try client.readResponse() }
        #expect(replies.map(\.status) == [200, 200, 200, 304, 404, 200, 200])
        #expect(replies[1].text == "1")
        #expect(replies[6].text == "null")

        // Byte by byte works as well.
        for byte in RawClient.request("GET", "/p.json") { try client.send([byte]) }
        #expect(try client.readResponse().text == "null")
    }

    @Test func connectionCloseIsHonoured() throws {
        let api = try APIFixture()
        defer { api.shutdown() }
        let client = try api.client()
        var batch = RawClient.request("PUT", "/c.json", headers: [("Connection", "close")], body: "1")
        batch += RawClient.request("PUT", "/c.json", body: "2")  // after close: not answered
        try client.send(batch)
        let reply = try client.readResponse()
        #expect(reply.status == 200)
        #expect(reply.header("Connection") == "close")
        #expect(try client.readToEnd().isEmpty)
        #expect(try api.call("GET", "/c.json").text == "1")

        // HTTP/1.0 closes unless asked to keep alive.
        let old = try api.client()
        try old.send("GET /c.json HTTP/1.0\r\nAuthorization: Bearer \(APIFixture.token)\r\n\r\n")
        let oldReply = try old.readResponse()
        #expect(oldReply.status == 200)
        #expect(oldReply.header("Connection") == "close")
        #expect(try old.readToEnd().isEmpty)

        let kept = try api.client()
        try kept.send("GET /c.json HTTP/1.0\r\nConnection: keep-alive\r\nAuthorization: Bearer \(APIFixture.token)\r\n\r\n")
        #expect(try kept.readResponse().header("Connection") == "keep-alive")
        try kept.send("GET /c.json HTTP/1.0\r\nAuthorization: Bearer \(APIFixture.token)\r\n\r\n")
        #expect(try kept.readResponse().text == "1")
    }

    @Test func idleConnectionsAreClosedButStreamsAndBusyOnesAreNot() throws {
        let api = try APIFixture(idleTimeoutSeconds: 0.3)
        defer { api.shutdown() }
        let stream = try api.client()
        _ = try stream.openStream("/idle.json")
        #expect(try stream.nextEvent().json == ["path": "/", "data": nil])
        let idle = try api.client()
        try idle.send(RawClient.request("GET", "/idle.json"))
        #expect(try idle.readResponse().status == 200)
        // Nothing more on `idle`: the server closes it once the timeout has passed (the read
        // below returns at end of stream, well within the client's 10 s read timeout).
        let started = Date()
        #expect(try idle.readToEnd().isEmpty)
        #expect(Date().timeIntervalSince(started) >= 0.25)
        // The event stream, just as quiet from its client, is still served.
        _ = try api.call("PUT", "/idle.json", body: "7")
        #expect(try stream.nextChange().json == ["path": "/", "data": 7])
    }

    @Test func aRequestThatWaitedOnABusyNodeIsAnsweredNotClosedAsIdle() throws {
        let api = try APIFixture(idleTimeoutSeconds: 0.4)
        defer { api.shutdown() }
        let client = try api.client()
        try client.send(RawClient.request("GET", "/busy.json"))
        #expect(try client.readResponse().status == 200)
        // The node's queue is busy for three times the idle timeout (as a large write's fold
        // keeps it), and the client's next request arrives meanwhile: it waits unread, and the
        // sweep that runs late once the queue is free must not take the connection for idle.
        let node = api.node
        node.queue.async { Thread.sleep(forTimeInterval: 1.2) }
        Thread.sleep(forTimeInterval: 0.6)  // well into the busy time: the request must wait
        try client.send(RawClient.request("GET", "/busy.json"))
        #expect(try client.readResponse().status == 200)
    }

    @Test func errorResponsesKeepTheConnectionWhenFramingIsSound() throws {
        let api = try APIFixture()
        defer { api.shutdown() }
        let client = try api.client()
        try client.send(RawClient.request("GET", "/a.json", auth: false))
        #expect(try client.readResponse().status == 401)
        try client.send(RawClient.request("PUT", "/a.json", body: "{"))
        #expect(try client.readResponse().status == 400)
        try client.send(RawClient.request("GET", "/a$.json"))
        #expect(try client.readResponse().status == 400)
        try client.send(RawClient.request("GET", "/a.json"))
        #expect(try client.readResponse().status == 200)
    }

    @Test func manyConcurrentConnections() throws {
        let api = try APIFixture()
        defer { api.shutdown() }
        _ = try api.call("PUT", "/shared.json", body: #"{"v":"x"}"#)
        let count = 200
        let clients = try (0..<count).map { _ in try api.client() }
        // All open at once, each with a request in flight before any is read.
        for (i, client) in clients.enumerated() {
            if i % 2 == 0 {
                try client.send(RawClient.request("GET", "/shared.json"))
            } else {
                try client.send(RawClient.request("PUT", "/each/c\(i).json", body: "\(i)"))
            }
        }
        for (i, client) in clients.enumerated() {
            let reply = try client.readResponse()
            #expect(reply.status == 200)
            #expect(reply.text == (i % 2 == 0 ? #"{"v":"x"}"# : "\(i)"))
        }
        let each = try #require(try api.call("GET", "/each.json?shallow=true").json?.objectValue)
        #expect(each.count == count / 2)

        // And from many threads at once, several requests each.
        let port = api.port
        let errors = concurrently(50) { i in
            let client = try RawClient(port: port)
            for j in 0..<5 {
                try client.send(RawClient.request("PUT", "/threads/t\(i).json", body: "\(j)"))
                let reply = try client.readResponse()
                guard reply.status == 200, reply.text == "\(j)" else { throw ClientError("\(reply)") }
            }
        }
        #expect(errors.isEmpty, "\(errors)")
        for client in clients { client.close() }
    }
}

@Suite("Local API: connections, more")
struct ConnectionMoreTests {
    @Test func headIsAGetWithoutBody() throws {
        let api = try APIFixture()
        defer { api.shutdown() }
        _ = try api.call("PUT", "/h.json", body: #"{"a":"bcd"}"#)
        let client = try api.client()
        try client.send(RawClient.request("HEAD", "/h.json"))
        let (status, headers) = try client.readHead()
        #expect(status == 200)
        let reply = HTTPReply(status: status, headers: headers, body: [])
        #expect(reply.header("Content-Length") == "11")
        #expect(reply.header("ETag") == firebaseETag(of: ["a": "bcd"]))
        // The connection's framing is intact: the next response follows at once.
        try client.send(RawClient.request("GET", "/h/a.json"))
        #expect(try client.readResponse().text == #""bcd""#)
        try client.send(RawClient.request("HEAD", "/nope"))
        #expect(try client.readHead().status == 404)
        try client.send(RawClient.request("GET", "/h/a.json"))
        #expect(try client.readResponse().text == #""bcd""#)
    }

    @Test func aClientThatPipelinesWithoutReadingIsPausedNotBuffered() throws {
        let api = try APIFixture()
        defer { api.shutdown() }
        let value = "\"" + String(repeating: "z", count: 10_000) + "\""
        _ = try api.call("PUT", "/v.json", body: value)
        let count = 1500  // about 15 MB of responses
        let client = try api.client(receiveBuffer: 64 * 1024)
        let box = UncheckedBox(client)
        let sent = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            var batch: [UInt8] = []
            for i in 0..<count { batch += RawClient.request("GET", i == count - 1 ? "/v.json?last=1" : "/v.json") }
            try? box.value.send(batch)
            sent.signal()
        }
        for _ in 0..<count {
            let reply = try client.readResponse()
            #expect(reply.status == 200)
            #expect(reply.body.count == value.utf8.count)
        }
        #expect(sent.wait(timeout: .now() + 10) == .success)
        // Still usable afterwards.
        try client.send(RawClient.request("GET", "/v.json?shallow=true"))
        #expect(try client.readResponse().status == 200)
    }
}
