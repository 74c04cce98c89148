import HTTP
import Testing

/// Every bound, exactly at the limit (accepted) and one byte or item over (refused).
@Suite("HTTP parser limits")
struct LimitTests {
    /// Small limits so the boundaries are easy to build.
    static let small = HTTPLimits(maxRequestLineBytes: 64, maxHeaderLineBytes: 40, maxHeaderBytes: 100,
                                  maxHeaderCount: 4, maxBodyBytes: 10)

    /// A header line of exactly `length` bytes (without CRLF).
    func headerLine(length: Int, name: String = "X") -> String {
        name + ": " + String(repeating: "v", count: length - name.utf8.count - 2)
    }

    @Test func requestLine() {
        let fixed = "GET / HTTP/1.1".utf8.count
        let atLimit = "GET /" + String(repeating: "a", count: 64 - fixed) + " HTTP/1.1"
        #expect(atLimit.utf8.count == 64)
        #expect(request(atLimit + "\r\nHost: h\r\n\r\n", limits: Self.small) != nil)
        let over = "GET /" + String(repeating: "a", count: 65 - fixed) + " HTTP/1.1"
        #expect(parseError(over + "\r\nHost: h\r\n\r\n", limits: Self.small) == .requestLineTooLong)
        // Refused before the line ends, so an endless line cannot fill memory.
        #expect(parseError("GET /" + String(repeating: "a", count: 200), limits: Self.small) == .requestLineTooLong)
        #expect(parseError("GET /" + String(repeating: "a", count: 58), limits: Self.small) == nil, "incomplete but may still fit")
        #expect(HTTPError.requestLineTooLong.status == 414)
    }

    @Test func defaultRequestLineIs8KiB() {
        let fixed = "GET / HTTP/1.1".utf8.count
        let atLimit = "GET /" + String(repeating: "a", count: 8192 - fixed) + " HTTP/1.1\r\nHost: h\r\n\r\n"
        #expect(request(atLimit) != nil)
        let over = "GET /" + String(repeating: "a", count: 8193 - fixed) + " HTTP/1.1\r\nHost: h\r\n\r\n"
        #expect(parseError(over) == .requestLineTooLong)
    }

    @Test func headerLine() {
        let head = "GET / HTTP/1.1\r\nHost: h\r\n"
        #expect(request(head + headerLine(length: 40) + "\r\n\r\n", limits: Self.small) != nil)
        #expect(parseError(head + headerLine(length: 41) + "\r\n\r\n", limits: Self.small) == .headerLineTooLong)
        #expect(parseError(head + headerLine(length: 41), limits: Self.small) == nil, "41 bytes without CR could still be 40 + CR")
        #expect(parseError(head + headerLine(length: 42), limits: Self.small) == .headerLineTooLong)
        #expect(HTTPError.headerLineTooLong.status == 431)
    }

    @Test func defaultHeaderLineIs8KiB() {
        let head = "GET / HTTP/1.1\r\nHost: h\r\n"
        #expect(request(head + headerLine(length: 8192) + "\r\n\r\n") != nil)
        #expect(parseError(head + headerLine(length: 8193) + "\r\n\r\n") == .headerLineTooLong)
    }

    @Test func totalHeaderBytes() {
        // "Host: h" is 7 bytes; two 40-byte lines make 87; a 13-byte line makes exactly 100.
        let lines = ["Host: h", headerLine(length: 40, name: "A"), headerLine(length: 40, name: "B")]
        let atLimit = lines + [headerLine(length: 13, name: "C")]
        let over = lines + [headerLine(length: 14, name: "C")]
        func text(_ lines: [String]) -> String { "GET / HTTP/1.1\r\n" + lines.map { $0 + "\r\n" }.joined() + "\r\n" }
        #expect(request(text(atLimit), limits: Self.small) != nil)
        #expect(parseError(text(over), limits: Self.small) == .headersTooLarge)
        #expect(HTTPError.headersTooLarge.status == 431)
    }

    @Test func defaultTotalHeaderBytesIs32KiB() {
        // The Host line counts too: it, three full 8 KiB lines and one that fills the rest.
        let host = "Host: h"
        let full = (0..<3).map { headerLine(length: 8192, name: "X\($0)") }
        let rest = 32 * 1024 - 3 * 8192 - host.utf8.count
        func text(_ last: Int) -> String {
            "GET / HTTP/1.1\r\n" + ([host] + full + [headerLine(length: last, name: "Y")]).map { $0 + "\r\n" }.joined() + "\r\n"
        }
        #expect(request(text(rest)) != nil)
        #expect(parseError(text(rest + 1)) == .headersTooLarge)
    }

    @Test func headerCount() {
        let atLimit = "GET / HTTP/1.1\r\nHost: h\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n"
        let over = "GET / HTTP/1.1\r\nHost: h\r\nA: 1\r\nB: 2\r\nC: 3\r\nD: 4\r\n\r\n"
        #expect(request(atLimit, limits: Self.small) != nil)
        #expect(parseError(over, limits: Self.small) == .tooManyHeaders)
        let hundred = "GET / HTTP/1.1\r\nHost: h\r\n" + (1..<100).map { "X\($0): v\r\n" }.joined() + "\r\n"
        #expect(request(hundred) != nil)
        let hundredOne = "GET / HTTP/1.1\r\nHost: h\r\n" + (1...100).map { "X\($0): v\r\n" }.joined() + "\r\n"
        #expect(parseError(hundredOne) == .tooManyHeaders)
        #expect(HTTPError.tooManyHeaders.status == 431)
    }

    @Test func contentLengthBody() {
        let atLimit = "PUT / HTTP/1.1\r\nHost: h\r\nContent-Length: 10\r\n\r\n0123456789"
        #expect(request(atLimit, limits: Self.small)?.body.count == 10)
        // Refused from the header alone, before any body byte is read.
        #expect(parseError("PUT / HTTP/1.1\r\nHost: h\r\nContent-Length: 11\r\n\r\n", limits: Self.small) == .bodyTooLarge)
        #expect(parseError("PUT / HTTP/1.1\r\nHost: h\r\nContent-Length: 99999999999999999999999\r\n\r\n") == .bodyTooLarge)
        #expect(HTTPError.bodyTooLarge.status == 413)
    }

    @Test func defaultBodyIs16MiB() {
        let limit = 16 * 1024 * 1024
        #expect(parseError("PUT / HTTP/1.1\r\nHost: h\r\nContent-Length: \(limit + 1)\r\n\r\n") == .bodyTooLarge)
        var bytes = Array("PUT / HTTP/1.1\r\nHost: h\r\nContent-Length: \(limit)\r\n\r\n".utf8)
        bytes.append(contentsOf: repeatElement(UInt8(ascii: "x"), count: limit))
        let result = parse([bytes])
        #expect(result.error == nil)
        #expect(requests(result.events).first?.body.count == limit)
    }

    @Test func chunkedBody() {
        let atLimit = "PUT / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n4\r\n0123\r\n6\r\n456789\r\n0\r\n\r\n"
        #expect(request(atLimit, limits: Self.small)?.body == Array("0123456789".utf8))
        // The running total is checked at each size line, before the chunk's data arrives.
        let over = "PUT / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n4\r\n0123\r\n7\r\n"
        #expect(parseError(over, limits: Self.small) == .bodyTooLarge)
        let huge = "PUT / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\nFFFFFFFFFFFFFFFFFFFFFFFF\r\n"
        #expect(parseError(huge) == .bodyTooLarge)
    }

    @Test func trailersShareTheHeaderBudgets() {
        let head = "PUT / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n"
        // Host and Transfer-Encoding are 2 lines; 2 trailers make 4 (at the limit), 3 make 5.
        #expect(request(head + "T1: a\r\nT2: b\r\n\r\n", limits: Self.small) != nil)
        #expect(parseError(head + "T1: a\r\nT2: b\r\nT3: c\r\n\r\n", limits: Self.small) == .tooManyHeaders)
        #expect(parseError(head + headerLine(length: 41) + "\r\n\r\n", limits: Self.small) == .headerLineTooLong)
        // An endless trailer line is refused early.
        #expect(parseError(head + "T: " + String(repeating: "x", count: 1000), limits: Self.small) != nil)
    }

    @Test func chunkSizeLineIsBounded() {
        let head = "PUT / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
        #expect(parseError(head + "1;" + String(repeating: "e", count: 38) + "\r\nx\r\n0\r\n\r\n", limits: Self.small) == nil)
        #expect(parseError(head + "1;" + String(repeating: "e", count: 39) + "\r\nx\r\n0\r\n\r\n", limits: Self.small) == .malformedChunk)
        #expect(parseError(head + "1;" + String(repeating: "e", count: 5000), limits: Self.small) == .malformedChunk)
    }
}
