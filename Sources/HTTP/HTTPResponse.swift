/// A response to serialize. The local API builds whole responses (JSON bodies are small and
/// complete before sending); streams use `HTTPChunkedWriter` instead.
public struct HTTPResponse: Sendable, CustomStringConvertible {
    /// The status code, e.g. 200. Codes outside 100...999 are written as 500.
    public var status: Int
    /// The reason phrase; any CR, LF or other control byte is replaced by a space.
    public var reason: String
    /// Header lines in order. Names that are not tokens are dropped and control bytes in values
    /// become spaces, so no caller-supplied text can inject a header or split the response.
    public var headers: [(name: String, value: String)]
    /// The body; never written for 1xx, 204 and 304, which cannot have one.
    public var body: [UInt8]

    /// A response; `reason` defaults to the standard phrase for `status`.
    public init(status: Int, reason: String? = nil, headers: [(name: String, value: String)] = [], body: [UInt8] = []) {
        self.status = status
        self.reason = reason ?? HTTPReasonPhrase.phrase(for: status)
        self.headers = headers
        self.body = body
    }

    /// The interim answer to `Expect: 100-continue`, ready to write.
    public static let continueHead: [UInt8] = Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)

    /// Whether this status forbids a body (RFC 9110 §6.4.1).
    public var forbidsBody: Bool {
        (100..<200).contains(status) || status == 204 || status == 304
    }

    /// The bytes to write: status line, headers, a `Content-Length` when the response may have
    /// a body and the caller set neither `Content-Length` nor `Transfer-Encoding`, then the body.
    /// A caller-set `Content-Length` is trusted as given.
    public func serialized() -> [UInt8] {
        var bytes = head(extraHeaders: [])
        if !forbidsBody { bytes.append(contentsOf: body) }
        return bytes
    }

    /// The status line and headers with the closing empty line; `extraHeaders` come last.
    func head(extraHeaders: [(name: String, value: String)], addLength: Bool = true) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(128 + headers.count * 32)
        let code = (100...999).contains(status) ? status : 500
        bytes.append(contentsOf: "HTTP/1.1 \(code) ".utf8)
        Self.appendText(reason, to: &bytes)
        bytes.append(contentsOf: [ASCII.cr, ASCII.lf])
        var framed = false
        for (name, value) in headers + extraHeaders where !name.isEmpty && name.utf8.allSatisfy(ASCII.isTokenChar) {
            if ASCII.equalsIgnoringCase(name, "content-length") || ASCII.equalsIgnoringCase(name, "transfer-encoding") {
                framed = true
            }
            bytes.append(contentsOf: name.utf8)
            bytes.append(contentsOf: [ASCII.colon, ASCII.space])
            Self.appendText(value, to: &bytes)
            bytes.append(contentsOf: [ASCII.cr, ASCII.lf])
        }
        if addLength, !framed, !forbidsBody {
            bytes.append(contentsOf: "Content-Length: \(body.count)\r\n".utf8)
        }
        bytes.append(contentsOf: [ASCII.cr, ASCII.lf])
        return bytes
    }

    /// Appends `text` with every control byte (CR and LF included) replaced by a space.
    static func appendText(_ text: String, to bytes: inout [UInt8]) {
        for byte in text.utf8 {
            bytes.append(byte < 0x20 || byte == 0x7F ? ASCII.space : byte)
        }
    }

    /// "200 OK (2 headers, 13 body bytes)".
    public var description: String {
        "\(status) \(reason) (\(headers.count) headers, \(body.count) body bytes)"
    }
}
