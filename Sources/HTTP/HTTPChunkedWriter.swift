/// Framing for responses streamed with `Transfer-Encoding: chunked`, such as the event streams
/// of listeners: the length is unknown when the head is sent, and every event must reach the
/// client when written, so each write becomes one chunk.
public enum HTTPChunkedWriter: Sendable {
    /// The status line and headers of a streaming response, with `Transfer-Encoding: chunked`
    /// added. Any `Content-Length` or `Transfer-Encoding` among `headers` is dropped, since the
    /// chunked framing must be the only one.
    public static func head(status: Int = 200, reason: String? = nil, headers: [(name: String, value: String)] = []) -> [UInt8] {
        let kept = headers.filter {
            !ASCII.equalsIgnoringCase($0.name, "content-length") && !ASCII.equalsIgnoringCase($0.name, "transfer-encoding")
        }
        let response = HTTPResponse(status: status, reason: reason, headers: kept)
        return response.head(extraHeaders: [(name: "Transfer-Encoding", value: "chunked")], addLength: false)
    }

    /// One chunk carrying `bytes`. Empty input gives no bytes at all, because an empty chunk
    /// would end the stream.
    public static func chunk(_ bytes: some Collection<UInt8>) -> [UInt8] {
        guard !bytes.isEmpty else { return [] }
        var framed = Array(String(bytes.count, radix: 16).utf8)
        framed.reserveCapacity(framed.count + bytes.count + 4)
        framed.append(contentsOf: [ASCII.cr, ASCII.lf])
        framed.append(contentsOf: bytes)
        framed.append(contentsOf: [ASCII.cr, ASCII.lf])
        return framed
    }

    /// The last chunk with no trailers: the end of the stream.
    public static func end() -> [UInt8] {
        Array("0\r\n\r\n".utf8)
    }

    /// The status line and headers of a response streamed to an HTTP/1.0 client, which knows no
    /// chunked coding: the body is sent as it comes and ends when the connection closes
    /// (`Connection: close`). Any `Content-Length`, `Transfer-Encoding` or `Connection` among
    /// `headers` is dropped.
    public static func closeDelimitedHead(status: Int = 200, reason: String? = nil, headers: [(name: String, value: String)] = []) -> [UInt8] {
        let kept = headers.filter {
            !ASCII.equalsIgnoringCase($0.name, "content-length") && !ASCII.equalsIgnoringCase($0.name, "transfer-encoding")
                && !ASCII.equalsIgnoringCase($0.name, "connection")
        }
        let response = HTTPResponse(status: status, reason: reason, headers: kept)
        return response.head(extraHeaders: [(name: "Connection", value: "close")], addLength: false)
    }
}
