// Shared helpers for the HTTP tests: drive a parser over whole inputs or arbitrary splits.
import HTTP
import TestSupport

/// Everything a parser reports for `pieces` fed one after the other, draining after each:
/// the events in order and the error that stopped it, if any.
func parse(_ pieces: [[UInt8]], limits: HTTPLimits = .default) -> (events: [HTTPParserEvent], error: HTTPError?) {
    var parser = HTTPRequestParser(limits: limits)
    var events: [HTTPParserEvent] = []
    do {
        for piece in pieces {
            parser.append(piece)
            while let event = try parser.next() { events.append(event) }
        }
        return (events, nil)
    } catch {
        return (events, error)
    }
}

/// `parse` of one piece of text.
func parse(_ text: String, limits: HTTPLimits = .default) -> (events: [HTTPParserEvent], error: HTTPError?) {
    parse([Array(text.utf8)], limits: limits)
}

/// The requests among `events`.
func requests(_ events: [HTTPParserEvent]) -> [HTTPRequest] {
    events.compactMap { event in
        if case .request(let request) = event { return request }
        return nil
    }
}

/// The one request `text` parses to, or nil when it does not parse to exactly one.
func request(_ text: String, limits: HTTPLimits = .default) -> HTTPRequest? {
    let result = parse(text, limits: limits)
    let all = requests(result.events)
    guard result.error == nil, all.count == 1 else { return nil }
    return all[0]
}

/// The error `text` makes the parser report, or nil.
func parseError(_ text: String, limits: HTTPLimits = .default) -> HTTPError? {
    parse(text, limits: limits).error
}

