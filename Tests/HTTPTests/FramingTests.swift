import HTTP
import Testing

/// Framing that two parsers could read differently is refused (request smuggling).
@Suite("HTTP body framing")
struct FramingTests {
    func error(_ headers: String, version: String = "HTTP/1.1") -> HTTPError? {
        parseError("POST / \(version)\r\nHost: h\r\n\(headers)\r\n0\r\n\r\n")
    }

    @Test func contentLengthWithTransferEncoding() {
        #expect(error("Content-Length: 5\r\nTransfer-Encoding: chunked\r\n") == .ambiguousFraming)
        #expect(error("Transfer-Encoding: chunked\r\nContent-Length: 5\r\n") == .ambiguousFraming)
        #expect(error("Transfer-Encoding: chunked\r\nContent-Length: 0\r\n") == .ambiguousFraming)
        #expect(HTTPError.ambiguousFraming.status == 400)
    }

    @Test func duplicateContentLengths() {
        #expect(error("Content-Length: 1\r\nContent-Length: 2\r\n") == .invalidContentLength)
        #expect(error("Content-Length: 1, 2\r\n") == .invalidContentLength)
        // Repeats that agree are allowed (RFC 9110 §8.6).
        #expect(request("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\nContent-Length: 02\r\n\r\nab")?.body == Array("ab".utf8))
        #expect(request("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 2, 2\r\n\r\nab")?.body == Array("ab".utf8))
    }

    @Test func contentLengthMustBeDigits() {
        for value in ["", "+5", "-5", "5a", "0x5", "5 5", "5,", " , ", "١"] {
            #expect(error("Content-Length: \(value)\r\n") == .invalidContentLength, "\(value.debugDescription)")
        }
    }

    @Test func transferCodings() {
        #expect(error("Transfer-Encoding: gzip, chunked\r\n") == .unsupportedTransferCoding)
        #expect(error("Transfer-Encoding: chunked, gzip\r\n") == .unsupportedTransferCoding)
        #expect(error("Transfer-Encoding: identity\r\n") == .unsupportedTransferCoding)
        #expect(error("Transfer-Encoding: chunked;x=1\r\n") == .unsupportedTransferCoding)
        #expect(error("Transfer-Encoding: chunked, chunked\r\n") == .ambiguousFraming)
        #expect(error("Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n") == .ambiguousFraming)
        #expect(error("Transfer-Encoding: \r\n") == .ambiguousFraming)
        #expect(error("Transfer-Encoding: CHUNKED\r\n") == nil)
        #expect(HTTPError.unsupportedTransferCoding.status == 501)
    }

    @Test func chunkedNeedsHTTP11() {
        #expect(error("Transfer-Encoding: chunked\r\n", version: "HTTP/1.0") == .ambiguousFraming)
    }

    @Test func noFramingMeansNoBody() {
        // Without a length the bytes after the head are the next request.
        let result = parse("POST /a HTTP/1.1\r\nHost: h\r\n\r\nGET /b HTTP/1.1\r\nHost: h\r\n\r\n")
        #expect(requests(result.events).map(\.rawPath) == ["/a", "/b"])
        #expect(requests(result.events).first?.body == [])
    }
}
