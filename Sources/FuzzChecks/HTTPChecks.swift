import HTTP
import Tree

/// The local API's HTTP/1.1 request parser, fed in pieces. Invariants: every event consumes
/// input (so a run is bounded by its length), requests keep within the limits, and an error is
/// a 4xx/5xx that the parser then repeats on every call.
public enum HTTPChecks {
    static let small = HTTPLimits(maxRequestLineBytes: 128, maxHeaderLineBytes: 64, maxHeaderBytes: 256,
                                  maxHeaderCount: 8, maxBodyBytes: 512)

    static func requests(_ input: [UInt8]) throws(FuzzViolation) {
        let t = FuzzTarget.http
        var reader = FuzzInput(input)
        let control = reader.byte()
        let limits = control & 1 == 1 ? small : .default
        let stream = reader.rest
        var parser = HTTPRequestParser(limits: limits)
        var events = 0
        for piece in pieces(stream, sizes: [1 + Int(control >> 1), 1, 13]) {
            parser.append(piece)
            while true {
                let event: HTTPParserEvent?
                do { event = try parser.next() } catch {
                    try require(parser.hasFailed, t, "an error left the parser running")
                    try require((400...505).contains(error.status), t, "error status \(error.status)")
                    do { _ = try parser.next() } catch let again {
                        try require(again == error, t, "the parser forgot its error")
                        return
                    }
                    throw FuzzViolation(target: t.rawValue, message: "the parser went on after an error")
                }
                guard let event else { break }
                events += 1
                try require(events <= 2 * stream.count + 2, t, "\(events) events from \(stream.count) bytes")
                guard case let .request(request) = event else { continue }
                try require(request.body.count <= limits.maxBodyBytes, t, "a body of \(request.body.count) bytes")
                try require(request.headers.count <= limits.maxHeaderCount, t, "\(request.headers.count) headers")
                try require(!request.method.isEmpty, t, "a request without a method")
                // What the API does next with a request: its path and query.
                _ = try? Path(segments: request.path)
                _ = try? FirebaseQuery.parse(request.query.map { ($0.name, $0.value) })
            }
        }
    }
}
