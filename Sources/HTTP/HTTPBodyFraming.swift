/// How a request's body is delimited, decided once from its headers (RFC 9112 §6.3).
enum HTTPBodyFraming: Equatable {
    /// No body: neither `Content-Length` nor `Transfer-Encoding` (or a length of zero).
    case none
    /// Exactly this many bytes follow the head.
    case length(Int)
    /// The body is chunked.
    case chunked

    /// The framing of `request`, refusing every combination on which two parsers could disagree
    /// about where the body ends.
    init(request: HTTPRequest, maxBodyBytes: Int) throws(HTTPError) {
        let hasTransferEncoding = request.headers.contains { ASCII.equalsIgnoringCase($0.name, "transfer-encoding") }
        let lengths = request.headerValues("content-length")
        if hasTransferEncoding {
            // Both framings at once is the request-smuggling setup; so is chunked with HTTP/1.0,
            // which predates it (RFC 9112 §6.1).
            guard lengths.isEmpty, request.version != .http1_0 else { throw .ambiguousFraming }
            let codings = request.headerTokens("transfer-encoding")
            guard codings.allSatisfy({ $0 == "chunked" }) else { throw .unsupportedTransferCoding }
            // Empty, or chunked applied twice: the body's end cannot be trusted.
            guard codings.count == 1 else { throw .ambiguousFraming }
            self = .chunked
            return
        }
        guard !lengths.isEmpty else {
            self = .none
            return
        }
        let length = try Self.contentLength(lengths, maxBodyBytes: maxBodyBytes)
        self = length == 0 ? .none : .length(length)
    }

    /// The one length all `Content-Length` values (and their comma-separated elements) agree on.
    /// Each must be 1*DIGIT; a value above the limit is refused without parsing it further.
    static func contentLength(_ values: [String], maxBodyBytes: Int) throws(HTTPError) -> Int {
        var agreed: [UInt8]?
        for value in values {
            for element in value.utf8.split(separator: ASCII.comma, omittingEmptySubsequences: false) {
                let trimmed = element.drop(while: ASCII.isWhitespace).reversed().drop(while: ASCII.isWhitespace).reversed()
                guard !trimmed.isEmpty, trimmed.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else {
                    throw .invalidContentLength
                }
                // Compare without leading zeros, so "05" and "5" agree and no overflow can occur.
                let significant = Array(trimmed.drop(while: { $0 == UInt8(ascii: "0") }))
                if let agreed, agreed != significant { throw .invalidContentLength }
                agreed = significant
            }
        }
        guard let digits = agreed else { throw .invalidContentLength }
        guard digits.count <= 18 else { throw .bodyTooLarge }
        let length = digits.reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) }
        guard length <= maxBodyBytes else { throw .bodyTooLarge }
        return length
    }
}
