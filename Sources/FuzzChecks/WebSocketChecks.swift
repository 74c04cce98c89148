import Realtime
import Tree
import WebSocket

/// The API's websocket codec fed in pieces, and the Realtime Database framing, messages and
/// queries on the text it delivers. Invariants: the codec holds no more than one message and one
/// frame beyond its bound, delivers only UTF-8 text and messages within the bound, fails with a
/// code a close frame may carry and then stays failed; every event consumes input; a query that
/// is taken answers a window within its limit.
public enum WebSocketChecks {
    /// A location to run queries on.
    static let location: JSONValue = .object([
        "a": .object(["n": .number(1)]), "b": .object(["n": .number(3)]), "k": .object(["n": .number(3)]), "10": .bool(true),
    ])

    static func stream(_ input: [UInt8]) throws(FuzzViolation) {
        let t = FuzzTarget.websocket
        var reader = FuzzInput(input)
        let control = reader.byte()
        let bound = control & 1 == 1 ? 256 : 4096
        let stream = reader.rest
        var parser = WebSocketParser(maxMessageBytes: bound)
        var assembler = RealtimeFrameAssembler(maxMessageBytes: bound)
        var events = 0
        for piece in pieces(stream, sizes: [1 + Int(control >> 1), 7, 1]) {
            parser.append(piece)
            try require(parser.bufferedBytes <= bound + 14 + 125 + piece.count, t, "\(parser.bufferedBytes) bytes held")
            while true {
                let event: WebSocketEvent?
                do { event = try parser.next() } catch {
                    try require(error.code.isValidOnWire, t, "close code \(error.code)")
                    try require(parser.bufferedBytes == 0, t, "a failed parser holds bytes")
                    do { _ = try parser.next() } catch let again {
                        try require(again == error, t, "the parser forgot its failure")
                        return
                    }
                    throw FuzzViolation(target: t.rawValue, message: "the parser went on after a failure")
                }
                guard let event else { break }
                events += 1
                try require(events <= stream.count, t, "\(events) events from \(stream.count) bytes")
                switch event {
                case let .text(bytes):
                    try require(bytes.count <= bound, t, "a message of \(bytes.count) bytes")
                    try require(String(validating: bytes, as: UTF8.self) != nil, t, "text that is not UTF-8")
                    // A keep-alive, a frame count, a piece still to be joined, or a refusal: nothing yet.
                    guard let whole = try? assembler.receive(bytes) else { continue }
                    try require(whole.count <= bound, t, "a joined message of \(whole.count) bytes")
                    try message(whole, bound: bound)
                case let .binary(bytes):
                    try require(bytes.count <= bound, t, "a message of \(bytes.count) bytes")
                case let .ping(bytes), let .pong(bytes):
                    try require(bytes.count <= 125, t, "a control frame of \(bytes.count) bytes")
                case .close:
                    try require(parser.bufferedBytes == 0, t, "bytes held after a close")
                }
            }
        }
    }

    /// A joined protocol message: parsed within the bound; a request's query, if taken, answers
    /// no more children than its limit.
    static func message(_ bytes: [UInt8], bound: Int) throws(FuzzViolation) {
        let t = FuzzTarget.websocket
        guard case let .request(_, _, body)? = try? RealtimeMessage.parse(bytes, limits: JSONLimits(maxBytes: bound)) else { return }
        guard let query = try? RealtimeQuery(object: body["q"]) else { return }
        let window = query.window(of: location)
        if let limit = query.limit, case let .object(members) = window {
            try require(members.count <= limit, t, "a window of \(members.count) children past a limit of \(limit)")
        }
        _ = query.storeQuery
    }
}
