import HTTP
import Testing

@Suite("HTTP chunked bodies")
struct ChunkedBodyTests {
    static let head = "POST /todo.json HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"

    @Test func chunksAreJoined() {
        let parsed = request(Self.head + "5\r\nhello\r\n1\r\n \r\nA\r\n0123456789\r\n0\r\n\r\n")
        #expect(parsed?.body == Array("hello 0123456789".utf8))
    }

    @Test func hexSizesAnyCaseAndLeadingZeros() {
        let body = String(repeating: "z", count: 26)
        #expect(request(Self.head + "1a\r\n\(body)\r\n0\r\n\r\n")?.body.count == 26)
        #expect(request(Self.head + "1A\r\n\(body)\r\n000\r\n\r\n")?.body.count == 26)
        #expect(request(Self.head + "001A\r\n\(body)\r\n0\r\n\r\n")?.body.count == 26)
    }

    @Test func extensionsAreIgnored() {
        let parsed = request(Self.head + "3;name=value;flag\r\nabc\r\n2 ; q=\"quoted\"\r\nde\r\n0;last\r\n\r\n")
        #expect(parsed?.body == Array("abcde".utf8))
    }

    @Test func trailersAreConsumed() {
        let text = Self.head + "2\r\nhi\r\n0\r\nX-Checksum: abc\r\nX-Other: 1\r\n\r\nGET /next HTTP/1.1\r\nHost: h\r\n\r\n"
        let result = parse(text)
        #expect(result.error == nil)
        let all = requests(result.events)
        #expect(all.map(\.rawPath) == ["/todo.json", "/next"])
        #expect(all.first?.body == Array("hi".utf8))
        #expect(all.first?.header("x-checksum") == nil, "trailers are not merged into the headers")
    }

    @Test func emptyChunkedBody() {
        #expect(request(Self.head + "0\r\n\r\n")?.body == [])
    }

    @Test func malformedChunks() {
        let cases = [
            "\r\n",                 // no size
            "g\r\n",                // not hex
            "-1\r\n",               // sign
            "0x5\r\nhello\r\n",     // prefix
            "2\r\nabc\r\n",         // data longer than the size
            "2\r\nab\n",            // bare LF after data
            "2\r\nabXY",            // no CRLF after data
            "2 x\r\nab\r\n",        // junk after the size
            "2;ext\u{01}\r\nab\r\n",  // control byte in an extension
        ]
        for chunk in cases {
            #expect(parseError(Self.head + chunk) == .malformedChunk, "\(chunk.debugDescription)")
        }
        #expect(parseError(Self.head + "2\nab\r\n") == .malformedLineEnding)
        #expect(parseError(Self.head + "0\r\nbad trailer\r\n\r\n") == .malformedHeader)
    }
}
