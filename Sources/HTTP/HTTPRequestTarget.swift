/// A request target in origin form (`/path?query`) taken apart. Only origin form is accepted:
/// the local API is not a proxy, so absolute and authority forms have no meaning here.
struct HTTPRequestTarget: Sendable {
    /// The path exactly as sent (still percent-encoded), e.g. `/rooms/a%20b.json`.
    var rawPath: String
    /// The decoded segments, empty ones skipped (`/a//b/` gives `["a", "b"]`, `/` gives `[]`).
    var path: [String]
    /// The decoded query parameters in the order sent.
    var query: [(name: String, value: String)]

    /// Splits and decodes `target`. Segments are split on the raw `/` before decoding, so an
    /// encoded `%2F` stays inside its segment (and is later refused as a key by the tree).
    init(parsing target: String) throws(HTTPError) {
        let bytes = Array(target.utf8)
        guard bytes.first == ASCII.slash, bytes.allSatisfy(ASCII.isVisible), !bytes.contains(ASCII.hash) else {
            throw .invalidTarget
        }
        let queryStart = bytes.firstIndex(of: ASCII.question)
        let pathBytes = bytes[..<(queryStart ?? bytes.endIndex)]
        rawPath = String(decoding: pathBytes, as: UTF8.self)
        path = []
        for piece in pathBytes.split(separator: ASCII.slash, omittingEmptySubsequences: true) {
            guard let segment = PercentDecoding.decode(piece) else { throw .invalidTarget }
            path.append(segment)
        }
        query = []
        guard let queryStart else { return }
        let queryBytes = bytes[(queryStart + 1)...]
        for piece in queryBytes.split(separator: ASCII.ampersand, omittingEmptySubsequences: true) {
            let equals = piece.firstIndex(of: ASCII.equals)
            let nameBytes = piece[..<(equals ?? piece.endIndex)]
            let valueBytes = equals.map { piece[($0 + 1)...] } ?? piece[piece.endIndex...]
            guard let name = PercentDecoding.decode(nameBytes),
                  let value = PercentDecoding.decode(valueBytes) else { throw .invalidTarget }
            query.append((name: name, value: value))
        }
    }
}
