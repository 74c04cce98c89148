// The request line and header lines, each checked against the RFC 9112 grammar.

extension HTTPRequestParser {
    /// `method SP request-target SP HTTP-version`, with single spaces, a token method and an
    /// origin-form target (decoded here so a bad target fails before any header is read).
    func parseRequestLine(_ line: ArraySlice<UInt8>) throws(HTTPError) -> HTTPRequestHead {
        let parts = line.split(separator: ASCII.space, maxSplits: 3, omittingEmptySubsequences: false)
        guard parts.count == 3 else { throw .malformedRequestLine }
        let (methodBytes, targetBytes, versionBytes) = (parts[0], parts[1], parts[2])
        guard !methodBytes.isEmpty, methodBytes.allSatisfy(ASCII.isTokenChar) else { throw .malformedRequestLine }
        let version = try Self.parseVersion(versionBytes)
        guard !targetBytes.isEmpty, targetBytes.allSatisfy(ASCII.isVisible) else { throw .malformedRequestLine }
        let target = String(decoding: targetBytes, as: UTF8.self)
        return HTTPRequestHead(
            method: String(decoding: methodBytes, as: UTF8.self),
            target: target,
            version: version,
            parsedTarget: try HTTPRequestTarget(parsing: target)
        )
    }

    /// `HTTP/DIGIT.DIGIT`; any version but 1.0 and 1.1 is well-formed yet refused with 505.
    static func parseVersion(_ bytes: ArraySlice<UInt8>) throws(HTTPError) -> HTTPVersion {
        let prefix = Array("HTTP/".utf8)
        guard bytes.count == 8, bytes.prefix(5).elementsEqual(prefix) else { throw .malformedRequestLine }
        let major = bytes[bytes.startIndex + 5], dot = bytes[bytes.startIndex + 6], minor = bytes[bytes.startIndex + 7]
        let digits = UInt8(ascii: "0")...UInt8(ascii: "9")
        guard digits.contains(major), dot == UInt8(ascii: "."), digits.contains(minor) else { throw .malformedRequestLine }
        let version = HTTPVersion(major: Int(major - digits.lowerBound), minor: Int(minor - digits.lowerBound))
        guard version == .http1_0 || version == .http1_1 else { throw .unsupportedVersion }
        return version
    }

    /// `field-name ":" OWS field-value OWS`. A line starting with whitespace is obsolete line
    /// folding and is refused, as is whitespace before the colon (RFC 9112 §5.1).
    func parseHeaderLine(_ line: ArraySlice<UInt8>) throws(HTTPError) -> (name: String, value: String) {
        guard let colon = line.firstIndex(of: ASCII.colon) else { throw .malformedHeader }
        let name = line[..<colon]
        guard !name.isEmpty, name.allSatisfy(ASCII.isTokenChar) else { throw .malformedHeader }
        var value = line[(colon + 1)...]
        while let first = value.first, ASCII.isWhitespace(first) { value.removeFirst() }
        while let last = value.last, ASCII.isWhitespace(last) { value.removeLast() }
        guard value.allSatisfy(ASCII.isFieldValueByte) else { throw .malformedHeader }
        // Values are text to every consumer here; non-UTF-8 obs-text is repaired, not refused.
        return (String(decoding: name, as: UTF8.self), String(decoding: value, as: UTF8.self))
    }
}
