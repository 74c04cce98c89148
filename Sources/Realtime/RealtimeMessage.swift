import Tree

/// A protocol message from a client, as the Firebase SDKs send them: data messages
/// `{"t":"d","d":{"r":N,"a":ACTION,"b":BODY}}` (a request numbered N) and control messages
/// `{"t":"c","d":{"t":TYPE,"d":...}}`, of which the ping (`p`) asks for a pong.
public enum RealtimeMessage: Equatable, Sendable {
    case request(number: JSONValue, action: String, body: [String: JSONValue])
    case ping
    /// Another control message (an end of transmission, an upgrade acknowledgement): nothing to do.
    case control(String)

    /// The message in `bytes` (JSON), bounded by `limits`; anything not shaped as above is refused.
    public static func parse(_ bytes: [UInt8], limits: JSONLimits) throws(RealtimeError) -> RealtimeMessage {
        let value: JSONValue
        do { value = try JSONValue.parse(bytes, limits: limits) } catch {
            throw .invalidArgs("The message is not JSON: \(error)")
        }
        guard case let .object(envelope) = value, case let .string(layer)? = envelope["t"], case let .object(inner)? = envelope["d"] else {
            throw .invalidArgs("A message is {\"t\": \"d\" or \"c\", \"d\": {...}}")
        }
        switch layer {
        case "d":
            guard let number = inner["r"], case .number = number else { throw .invalidArgs("A request needs a number \"r\"") }
            guard case let .string(action)? = inner["a"] else { throw .invalidArgs("A request needs an action \"a\"") }
            let body: [String: JSONValue]
            switch inner["b"] {
            case nil, .null?: body = [:]
            case let .object(members)?: body = members
            default: throw .invalidArgs("A request's body \"b\" is an object")
            }
            return .request(number: number, action: action, body: body)
        case "c":
            guard case let .string(type)? = inner["t"] else { throw .invalidArgs("A control message needs a type \"t\"") }
            return type == "p" ? .ping : .control(type)
        default:
            throw .invalidArgs("Unknown message layer \(layer)")
        }
    }
}

/// The messages a node sends, as JSON values to serialize and frame.
public enum RealtimeReply {
    /// The server's hello: its time (for the SDK's clock skew, used by server timestamps), the
    /// protocol version, the host to reconnect to, and the session id.
    public static func handshake(timestampMillis: UInt64, host: String, session: String) -> JSONValue {
        control("h", .object(["ts": .number(Double(timestampMillis)), "v": "5", "h": .string(host), "s": .string(session)]))
    }

    /// The answer to ping.
    public static let pong = control("o", .object([:]))

    /// Tells the SDK the server is ending the connection, with a reason it logs.
    public static func shutdown(_ reason: String) -> JSONValue { control("s", .string(reason)) }

    /// The answer to request `number`: a status (`ok`, or an error the SDK reports) and data.
    public static func response(_ number: JSONValue, status: String, data: JSONValue? = nil) -> JSONValue {
        var body: [String: JSONValue] = ["s": .string(status)]
        if let data { body["d"] = data }
        return .object(["t": "d", "d": .object(["r": number, "b": .object(body)])])
    }

    /// The answer to a request that failed.
    public static func failure(_ number: JSONValue, _ error: RealtimeError) -> JSONValue {
        response(number, status: error.status, data: .string(error.message))
    }

    /// A message the server starts: `d` (data at a path), `m` (a merge), `c` (a listen revoked).
    public static func push(_ action: String, _ body: [String: JSONValue]) -> JSONValue {
        .object(["t": "d", "d": .object(["a": .string(action), "b": .object(body)])])
    }

    /// New data at `path` for the listen with `tag` (none for a listen of a whole location).
    public static func data(_ path: Path, _ value: JSONValue, tag: JSONValue?, merge: Bool = false) -> JSONValue {
        var body: [String: JSONValue] = ["p": .string(wirePath(path)), "d": value]
        if let tag { body["t"] = tag }
        return push(merge ? "m" : "d", body)
    }

    /// A path as the SDKs write them: segments joined by `/`, no leading slash, empty for the root.
    public static func wirePath(_ path: Path) -> String { path.segments.joined(separator: "/") }

    private static func control(_ type: String, _ data: JSONValue) -> JSONValue {
        .object(["t": "c", "d": .object(["t": .string(type), "d": data])])
    }
}
