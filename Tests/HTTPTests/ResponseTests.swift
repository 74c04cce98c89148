import HTTP
import Testing

@Suite("HTTP responses")
struct ResponseTests {
    func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }

    @Test func contentLengthIsAdded() {
        let response = HTTPResponse(status: 200, headers: [(name: "Content-Type", value: "application/json; charset=utf-8")],
                                    body: Array("{\"a\":1}".utf8))
        #expect(text(response.serialized())
            == "HTTP/1.1 200 OK\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: 7\r\n\r\n{\"a\":1}")
        #expect(text(HTTPResponse(status: 200).serialized()) == "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
    }

    @Test func callerFramingIsKept() {
        let response = HTTPResponse(status: 200, headers: [(name: "content-length", value: "3")], body: Array("abc".utf8))
        #expect(text(response.serialized()) == "HTTP/1.1 200 OK\r\ncontent-length: 3\r\n\r\nabc")
    }

    @Test func statusesWithoutBody() {
        let notModified = HTTPResponse(status: 304, headers: [(name: "ETag", value: "e1")], body: Array("ignored".utf8))
        #expect(text(notModified.serialized()) == "HTTP/1.1 304 Not Modified\r\nETag: e1\r\n\r\n")
        #expect(text(HTTPResponse(status: 204).serialized()) == "HTTP/1.1 204 No Content\r\n\r\n")
        #expect(text(HTTPResponse.continueHead) == "HTTP/1.1 100 Continue\r\n\r\n")
    }

    @Test func reasonPhrases() {
        #expect(HTTPResponse(status: 412).reason == "Precondition Failed")
        #expect(HTTPResponse(status: 431).reason == "Request Header Fields Too Large")
        #expect(HTTPResponse(status: 418).reason == "Client Error")
        #expect(HTTPResponse(status: 200, reason: "Fine").reason == "Fine")
        for error: HTTPError in [.malformedHeader, .bodyTooLarge, .requestLineTooLong, .tooManyHeaders,
                                 .unsupportedTransferCoding, .unsupportedVersion, .unsupportedExpectation] {
            #expect(!HTTPReasonPhrase.phrase(for: error.status).isEmpty)
            #expect(!error.reason.isEmpty)
        }
    }

    @Test func injectionIsNeutralized() {
        let response = HTTPResponse(status: 200, reason: "OK\r\nX-Evil: 1",
                                    headers: [(name: "X-Value", value: "a\r\nSet-Cookie: b"), (name: "Bad Name", value: "x"),
                                              (name: "X\r\nY", value: "z")])
        #expect(text(response.serialized())
            == "HTTP/1.1 200 OK  X-Evil: 1\r\nX-Value: a  Set-Cookie: b\r\nContent-Length: 0\r\n\r\n")
        #expect(text(HTTPResponse(status: 42).serialized()).hasPrefix("HTTP/1.1 500 "))
    }

    @Test func chunkedStreaming() {
        let head = HTTPChunkedWriter.head(status: 200, headers: [
            (name: "Content-Type", value: "text/event-stream; charset=utf-8"),
            (name: "Content-Length", value: "99"),
        ])
        #expect(text(head) == "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; charset=utf-8\r\nTransfer-Encoding: chunked\r\n\r\n")
        let event = Array("event: put\ndata: {\"path\":\"/\",\"data\":null}\n\n".utf8)
        #expect(event.count == 0x2b)
        #expect(text(HTTPChunkedWriter.chunk(event)) == "2b\r\n" + text(event) + "\r\n")
        #expect(HTTPChunkedWriter.chunk([UInt8]()) == [])
        #expect(text(HTTPChunkedWriter.end()) == "0\r\n\r\n")
    }

    @Test func chunkedOutputParsesBack() {
        // Our own writer's framing, read by our own parser, gives the bytes back.
        var stream = Array("PUT / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n".utf8)
        let pieces = [Array("x".utf8), Array(repeating: 0xAB, count: 300), Array("end".utf8)]
        for piece in pieces { stream += HTTPChunkedWriter.chunk(piece) }
        stream += HTTPChunkedWriter.end()
        let result = parse([stream])
        #expect(result.error == nil)
        #expect(requests(result.events).first?.body == pieces.flatMap { $0 })
    }
}
