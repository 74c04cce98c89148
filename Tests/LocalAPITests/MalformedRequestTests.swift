import Testing
import Tree

@Suite("Local API: malformed requests")
struct MalformedRequestTests {
    /// Sends raw bytes on a fresh connection and reads the answer.
    static func raw(_ api: APIFixture, _ bytes: [UInt8]) throws -> HTTPReply {
        let client = try api.client()
        defer { client.close() }
        try client.send(bytes)
        return try client.readResponse()
    }

    static func raw(_ api: APIFixture, _ text: String) throws -> HTTPReply { try raw(api, Array(text.utf8)) }

    static let auth = "Authorization: Bearer \(APIFixture.token)\r\n"

    /// The server still answers a normal request.
    static func expectAlive(_ api: APIFixture) throws {
        let reply = try api.call("GET", "/alive.json")
        #expect(reply.status == 200)
    }

    @Test func garbageBytes() throws {
        let api = try APIFixture()
        defer { api.shutdown() }
        let inputs: [[UInt8]] = [
            Array("\u{1}\u{2}garbage\r\n\r\n".utf8),
            [0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xFC, 0x03, 0x03, 0x0D, 0x0A, 0x0D, 0x0A],  // a TLS hello
            Array("GET\r\n\r\n".utf8),
            Array("GET /a.json HTTP/1.1\n\n".utf8),           // bare LF
            Array("GET a.json HTTP/1.1\r\nHost: x\r\n\r\n".utf8),  // not origin form
            Array("GET /a%ZZ.json HTTP/1.1\r\nHost: x\r\n\r\n".utf8),
            Array("GET /a.json HTTP/1.1\r\n\r\n".utf8),        // no Host
            Array("GET /a.json HTTP/1.1\r\nHost: x\r\nBad Header: 1\r\n\r\n".utf8),
            Array("GET /a.json HTTP/1.1\r\nHost: x\r\n folded\r\n\r\n".utf8),
            Array("GET /a.json HTTP/2.0\r\nHost: x\r\n\r\n".utf8),
            Array("GET /a.json HTTP/1.1\r\nHost: x\r\nExpect: magic\r\n\r\n".utf8),
        ]
        for input in inputs {
            let reply = try Self.raw(api, input)
            #expect((400..<500).contains(reply.status), "\(input): \(reply)")
            #expect(reply.header("Connection") == "close")
            #expect(reply.json?["error"]?.stringValue?.isEmpty == false)
        }
        try Self.expectAlive(api)
    }

    @Test func clientThatHangsUpMidRequest() throws {
        let api = try APIFixture()
        defer { api.shutdown() }
        let client = try api.client()
        try client.send("PUT /a.json HTTP/1.1\r\nHost: x\r\n\(Self.auth)Content-Length: 100\r\n\r\n{\"a\":")
        client.close()
        try Self.expectAlive(api)
        #expect(try api.call("GET", "/a.json").text == "null")
    }

    @Test func oversizedHeaders() throws {
        let api = try APIFixture()
        defer { api.shutdown() }
        let longLine = try Self.raw(api, "GET /a.json HTTP/1.1\r\nHost: x\r\nX-Big: \(String(repeating: "a", count: 9000))\r\n\r\n")
        #expect(longLine.status == 431)
        let many = (0..<200).map { "X-H\($0): v\r\n" }.joined()
        #expect(try Self.raw(api, "GET /a.json HTTP/1.1\r\nHost: x\r\n\(many)\r\n").status == 431)
        let total = (0..<6).map { "X-H\($0): \(String(repeating: "b", count: 7000))\r\n" }.joined()
        #expect(try Self.raw(api, "GET /a.json HTTP/1.1\r\nHost: x\r\n\(total)\r\n").status == 431)
        let longTarget = try Self.raw(api, "GET /\(String(repeating: "a", count: 9000)).json HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(longTarget.status == 414)
        try Self.expectAlive(api)
    }

    @Test func badContentLength() throws {
        let api = try APIFixture()
        defer { api.shutdown() }
        for value in ["abc", "-1", "1, 2", "", "0x10"] {
            let reply = try Self.raw(api, "PUT /a.json HTTP/1.1\r\nHost: x\r\n\(Self.auth)Content-Length: \(value)\r\n\r\n1")
            #expect(reply.status == 400, "\(value): \(reply)")
        }
        let both = try Self.raw(api, "PUT /a.json HTTP/1.1\r\nHost: x\r\n\(Self.auth)Content-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n1\r\n1\r\n0\r\n\r\n")
        #expect(both.status == 400)
        let huge = try Self.raw(api, "PUT /a.json HTTP/1.1\r\nHost: x\r\n\(Self.auth)Content-Length: 99999999999\r\n\r\n")
        #expect(huge.status == 413)
        let coding = try Self.raw(api, "PUT /a.json HTTP/1.1\r\nHost: x\r\n\(Self.auth)Transfer-Encoding: gzip\r\n\r\n")
        #expect((400..<500).contains(coding.status), "\(coding)")
        try Self.expectAlive(api)
        #expect(try api.call("GET", "/a.json").text == "null")
    }

    @Test func chunkedBodies() throws {
        let api = try APIFixture()
        defer { api.shutdown() }
        let body = "PUT /c.json HTTP/1.1\r\nHost: x\r\n\(Self.auth)Transfer-Encoding: chunked\r\n\r\n"
            + "4\r\n{\"a\"\r\n3;ext=1\r\n:12\r\n1\r\n}\r\n0\r\nTrailer: ok\r\n\r\n"
        let ok = try Self.raw(api, body)
        #expect(ok.status == 200, "\(ok)")
        #expect(ok.json == ["a": 12])
        #expect(try api.call("GET", "/c.json").json == ["a": 12])

        let bad = try Self.raw(api, "PUT /c.json HTTP/1.1\r\nHost: x\r\n\(Self.auth)Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n")
        #expect(bad.status == 400)
        let noCRLF = try Self.raw(api, "PUT /c.json HTTP/1.1\r\nHost: x\r\n\(Self.auth)Transfer-Encoding: chunked\r\n\r\n2\r\n{}XX0\r\n\r\n")
        #expect(noCRLF.status == 400)
        #expect(try api.call("GET", "/c.json").json == ["a": 12])
    }

    @Test func expectContinue() throws {
        let api = try APIFixture()
        defer { api.shutdown() }
        let client = try api.client()
        try client.send("PUT /e.json HTTP/1.1\r\nHost: x\r\n\(Self.auth)Expect: 100-continue\r\nContent-Length: 4\r\n\r\n")
        #expect(try client.readLine() == "HTTP/1.1 100 Continue")
        #expect(try client.readLine() == "")
        try client.send("true")
        let reply = try client.readResponse()
        #expect(reply.status == 200)
        #expect(reply.json == true)
    }

    @Test func invalidJSONBody() throws {
        let api = try APIFixture()
        defer { api.shutdown() }
        for body in ["{", "{'a':1}", "nul", "[1,]", "\u{1}", "{\"a\":1}x", "NaN"] {
            for method in ["PUT", "PATCH", "POST"] {
                let reply = try api.call(method, "/j.json", body: body)
                #expect(reply.status == 400, "\(method) \(body): \(reply)")
                #expect(reply.json == ["error": "Invalid data; couldn't parse JSON object, array, or value."], "\(method) \(body)")
                #expect(reply.header("Content-Type") == "application/json; charset=utf-8")
            }
        }
        // Invalid UTF-8 is not JSON either.
        let client = try api.client()
        try client.send(Array("PUT /j.json HTTP/1.1\r\nHost: x\r\n\(Self.auth)Content-Length: 3\r\n\r\n\"".utf8) + [0xFF, 0x22])
        #expect(try client.readResponse().status == 400)
        #expect(try api.call("GET", "/j.json").text == "null")
    }

    @Test func forbiddenKeysAndBadPaths() throws {
        let api = try APIFixture()
        defer { api.shutdown() }
        for target in ["/a$b.json", "/a%24b.json", "/a#b.json", "/a%23b.json", "/x/a[b.json", "/a%5Db.json", "/a%2Fb.json",
                       "/a%00b.json", "/a%7Fb.json", "/a.b.json"] {
            for method in ["GET", "PUT"] {
                let reply = try api.call(method, target, body: method == "PUT" ? "1" : nil)
                #expect(reply.status == 400, "\(method) \(target): \(reply)")
                #expect(reply.json?["error"]?.stringValue?.isEmpty == false)
            }
        }
        let deep = "/" + (0..<40).map { "k\($0)" }.joined(separator: "/") + ".json"
        #expect(try api.call("PUT", deep, body: "1").status == 400)
        let long = "/" + String(repeating: "k", count: 800) + ".json"
        #expect(try api.call("PUT", long, body: "1").status == 400)
        #expect(try api.call("PUT", "/d.json", body: String(repeating: "[", count: 40) + String(repeating: "]", count: 40)).status == 400)
        #expect(try api.call("PUT", "/d.json", body: #"{"a.b":1}"#).status == 400)
        // (A value past one record is a large write, stored: APILimitTests.writeSize.)
        #expect(try api.call("GET", "/.json").text == "null")
    }

    @Test func nonJSONPathsAre404() throws {
        let api = try APIFixture()
        defer { api.shutdown() }
        // "/" is the web app's page; every other path that is not data, an asset or storage is a 404.
        for target in ["/a", "/a.txt", "/a.json/b", "/favicon.ico"] {
            let reply = try api.call("GET", target)
            #expect(reply.status == 404, "\(target): \(reply)")
            #expect(reply.json?["error"] != nil)
        }
    }

    @Test func manyBadRequestsNever5xx() throws {
        let api = try APIFixture()
        defer { api.shutdown() }
        var seed: UInt64 = 0x9E37_79B9_7F4A_7C15
        func nextByte() -> UInt8 {
            seed = seed &* 6364136223846793005 &+ 1442695040888963407
            return UInt8(truncatingIfNeeded: seed >> 33)
        }
        let base = Array("PUT /a/b.json?x=1 HTTP/1.1\r\nHost: x\r\n\(Self.auth)Content-Length: 7\r\n\r\n{\"a\":1}".utf8)
        for _ in 0..<150 {
            var bytes = base
            for _ in 0..<3 { bytes[Int(nextByte()) % bytes.count] = nextByte() }
            let client = try api.client()
            try client.send(bytes)
            client.shutdownWrite()
            // Either a response (never 5xx) or a close when the mutation left a request unfinished.
            if let reply = try? client.readResponse() {
                #expect(reply.status < 500, "\(String(decoding: bytes, as: UTF8.self).debugDescription): \(reply)")
            }
            client.close()
        }
        try Self.expectAlive(api)
    }
}
