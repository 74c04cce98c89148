import HTTP
import Testing

@Suite("HTTP request parser")
struct RequestParserTests {
    @Test func simpleGet() throws {
        let parsed = try #require(request("GET /rooms/lobby.json?ns=demo HTTP/1.1\r\nHost: 127.0.0.1:9000\r\nAuthorization: Bearer owner\r\n\r\n"))
        #expect(parsed.method == "GET")
        #expect(parsed.target == "/rooms/lobby.json?ns=demo")
        #expect(parsed.rawPath == "/rooms/lobby.json")
        #expect(parsed.path == ["rooms", "lobby.json"])
        #expect(parsed.query.map(\.name) == ["ns"])
        #expect(parsed.queryValue("ns") == "demo")
        #expect(parsed.version == .http1_1)
        #expect(parsed.header("authorization") == "Bearer owner")
        #expect(parsed.header("HOST") == "127.0.0.1:9000")
        #expect(parsed.header("x-missing") == nil)
        #expect(parsed.body.isEmpty)
        #expect(parsed.keepAlive)
        #expect(!parsed.expectsContinue)
    }

    @Test func headerValuesAreTrimmedAndKeepOrder() throws {
        let parsed = try #require(request("GET / HTTP/1.1\r\nHost: h\r\nX-A: \t one  \r\nx-a:two\r\nX-Empty:\r\n\r\n"))
        #expect(parsed.headers.map(\.name) == ["Host", "X-A", "x-a", "X-Empty"])
        #expect(parsed.headerValues("X-A") == ["one", "two"])
        #expect(parsed.header("x-empty") == "")
    }

    @Test func bodyWithContentLength() throws {
        let parsed = try #require(request("PUT /a.json?print=silent HTTP/1.1\r\nHost: h\r\nContent-Length: 7\r\n\r\n{\"b\":1}"))
        #expect(parsed.body == Array("{\"b\":1}".utf8))
        #expect(parsed.queryValue("print") == "silent")
    }

    @Test func pipelinedRequestsInOneFeed() {
        let text = "GET /a.json HTTP/1.1\r\nHost: h\r\n\r\n"
            + "POST /b.json HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\n\"x\""
            + "PATCH /c.json HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n"
            + "DELETE /d.json HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n"
        let result = parse(text)
        #expect(result.error == nil)
        let all = requests(result.events)
        #expect(all.map(\.method) == ["GET", "POST", "PATCH", "DELETE"])
        #expect(all.map(\.body) == [[], Array("\"x\"".utf8), Array("{}".utf8), []])
        #expect(all.map(\.keepAlive) == [true, true, true, false])
    }

    @Test func everySplitGivesTheSameResult() {
        let text = "POST /p%20q/r.json?orderBy=%22%24key%22&startAt=1+2 HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhello"
            + "PUT /x.json HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nExpect: 100-continue\r\n\r\n"
            + "3;ext=1\r\nabc\r\n1\r\nd\r\n0\r\nTrailer: t\r\n\r\n"
            + "\r\nGET / HTTP/1.0\r\n\r\n"
        let bytes = Array(text.utf8)
        let whole = parse([bytes])
        #expect(whole.error == nil)
        #expect(requests(whole.events).count == 3)
        for cut in 0...bytes.count {
            let split = parse([Array(bytes[..<cut]), Array(bytes[cut...])])
            #expect(split.events == whole.events, "split at \(cut)")
            #expect(split.error == nil)
        }
        // And one byte at a time.
        let single = parse(bytes.map { [$0] })
        #expect(single.events == whole.events)
    }

    @Test func emptyLinesBeforeARequestAreSkipped() throws {
        let parsed = try #require(request("\r\n\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n"))
        #expect(parsed.path == [])
    }

    @Test func idleOnlyBetweenRequests() throws {
        var parser = HTTPRequestParser()
        #expect(parser.isIdle)
        parser.append(Array("GET / HTTP/1.1\r\nHo".utf8))
        #expect(try parser.next() == nil)
        #expect(!parser.isIdle)
        parser.append(Array("st: h\r\n\r\n".utf8))
        #expect(try parser.next() != nil)
        #expect(parser.isIdle)
    }

    @Test func expectContinueIsReportedBeforeTheBody() throws {
        var parser = HTTPRequestParser()
        parser.append(Array("PUT /a.json HTTP/1.1\r\nHost: h\r\nExpect: 100-Continue\r\nContent-Length: 2\r\n\r\n".utf8))
        #expect(try parser.next() == .continueExpected)
        #expect(try parser.next() == nil)
        parser.append(Array("{}".utf8))
        let event = try #require(try parser.next())
        guard case .request(let request) = event else {
            Issue.record("expected a request, got \(event)")
            return
        }
        #expect(request.expectsContinue)
        #expect(request.body == Array("{}".utf8))
        // No body, no 100 Continue to send.
        let bodiless = parse("GET / HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\n\r\n")
        #expect(bodiless.events.count == 1)
        #expect(parseError("PUT / HTTP/1.1\r\nHost: h\r\nExpect: something-else\r\nContent-Length: 0\r\n\r\n") == .unsupportedExpectation)
        #expect(HTTPError.unsupportedExpectation.status == 417)
        // HTTP/1.0 predates Expect: ignored, whatever it says.
        let old = parse("PUT / HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 1\r\n\r\nx")
        #expect(old.events.count == 1)
        #expect(requests(old.events).first?.expectsContinue == false)
        #expect(parseError("PUT / HTTP/1.0\r\nExpect: other\r\nContent-Length: 0\r\n\r\n") == nil)
    }

    @Test func keepAliveRules() throws {
        func keepAlive(_ version: String, _ connection: String?) -> Bool? {
            let header = connection.map { "Connection: \($0)\r\n" } ?? ""
            return request("GET / \(version)\r\nHost: h\r\n\(header)\r\n")?.keepAlive
        }
        #expect(keepAlive("HTTP/1.1", nil) == true)
        #expect(keepAlive("HTTP/1.1", "close") == false)
        #expect(keepAlive("HTTP/1.1", "Keep-Alive, CLOSE") == false)
        #expect(keepAlive("HTTP/1.1", "keep-alive") == true)
        #expect(keepAlive("HTTP/1.0", nil) == false)
        #expect(keepAlive("HTTP/1.0", "keep-alive") == true)
        #expect(keepAlive("HTTP/1.0", "Keep-Alive") == true)
        #expect(keepAlive("HTTP/1.0", "close") == false)
        #expect(keepAlive("HTTP/1.0", "upgrade, keep-alive") == true)
    }

    @Test func hostRules() {
        #expect(parseError("GET / HTTP/1.1\r\n\r\n") == .invalidHost)
        #expect(parseError("GET / HTTP/1.1\r\nHost: a\r\nhost: b\r\n\r\n") == .invalidHost)
        #expect(request("GET / HTTP/1.0\r\n\r\n") != nil, "HTTP/1.0 may omit Host")
    }

    @Test func malformedRequestLines() {
        let cases: [(String, HTTPError)] = [
            ("GET /\r\n\r\n", .malformedRequestLine),
            ("GET  / HTTP/1.1\r\n\r\n", .malformedRequestLine),
            ("GET / HTTP/1.1 \r\n\r\n", .malformedRequestLine),
            ("G(T / HTTP/1.1\r\n\r\n", .malformedRequestLine),
            ("GET / HTTP/1.x\r\n\r\n", .malformedRequestLine),
            ("GET / http/1.1\r\n\r\n", .malformedRequestLine),
            ("GET / HTTP/11\r\n\r\n", .malformedRequestLine),
            ("GET / HTTP/2.0\r\n\r\n", .unsupportedVersion),
            ("GET / HTTP/0.9\r\n\r\n", .unsupportedVersion),
            ("GET http://h/a HTTP/1.1\r\n\r\n", .invalidTarget),
            ("OPTIONS * HTTP/1.1\r\n\r\n", .invalidTarget),
            ("GET /a#frag HTTP/1.1\r\n\r\n", .invalidTarget),
            ("GET /\u{7F} HTTP/1.1\r\n\r\n", .malformedRequestLine),
            ("GET / HTTP/1.1\n\r\n", .malformedLineEnding),
            ("GET / HTTP/1.1\rX\n", .malformedLineEnding),
            ("GET / HTTP/1.1\rX\r\n\r\n", .malformedRequestLine),
        ]
        for (text, error) in cases {
            #expect(parseError(text) == error, "\(text.debugDescription)")
        }
        #expect(HTTPError.unsupportedVersion.status == 505)
        #expect(HTTPError.malformedRequestLine.status == 400)
    }

    @Test func malformedHeaders() {
        let cases: [(String, HTTPError)] = [
            ("Host : h", .malformedHeader),
            (" folded: x", .malformedHeader),
            ("\tfolded: x", .malformedHeader),
            ("no colon", .malformedHeader),
            (": empty name", .malformedHeader),
            ("Bad\u{01}Name: x", .malformedHeader),
            ("X: a\u{00}b", .malformedHeader),
            ("X: a\rb", .malformedHeader),
            ("X: a\u{7F}", .malformedHeader),
        ]
        for (line, error) in cases {
            #expect(parseError("GET / HTTP/1.1\r\nHost: h\r\n\(line)\r\n\r\n") == error, "\(line.debugDescription)")
        }
        #expect(parseError("GET / HTTP/1.1\r\nHost: h\nX: y\r\n\r\n") == .malformedLineEnding)
        // obs-text is allowed in values (and repaired to text).
        #expect(request("GET / HTTP/1.1\r\nHost: h\r\nX: caf\u{E9}\r\n\r\n")?.header("x") == "caf\u{E9}")
    }

    @Test func errorsAreSticky() throws {
        var parser = HTTPRequestParser()
        parser.append(Array("BROKEN\r\n".utf8))
        #expect(throws: HTTPError.malformedRequestLine) { try parser.next() }
        #expect(parser.hasFailed)
        parser.append(Array("GET / HTTP/1.1\r\nHost: h\r\n\r\n".utf8))
        #expect(throws: HTTPError.malformedRequestLine) { try parser.next() }
    }

    @Test func requestsBeforeAnErrorAreDelivered() {
        let result = parse("GET /ok HTTP/1.1\r\nHost: h\r\n\r\nGET /bad%zz HTTP/1.1\r\nHost: h\r\n\r\n")
        #expect(requests(result.events).map(\.rawPath) == ["/ok"])
        #expect(result.error == .invalidTarget)
    }

    @Test func requestInitializerMatchesTheParser() throws {
        let built = try HTTPRequest(method: "GET", target: "/a.json?x=1", version: .http1_0,
                                    headers: [(name: "Connection", value: "keep-alive")])
        let parsed = try #require(request("GET /a.json?x=1 HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"))
        #expect(built == parsed)
        #expect(throws: HTTPError.invalidTarget) { try HTTPRequest(method: "GET", target: "/%G0") }
    }
}
