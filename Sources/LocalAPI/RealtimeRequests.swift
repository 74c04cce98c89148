import Node
import Realtime
import Store
import Tree

/// The data requests of a Realtime Database session (after `auth`): writes, reads, listens and
/// onDisconnect writes, each answered with its request number.
extension RealtimeSession {
    func perform(_ number: JSONValue, _ action: String, _ body: [String: JSONValue]) throws {
        let path = try Self.path(body["p"])
        switch action {
        case "p", "m":
            let value = body["d"] ?? .null
            if action == "m", value.objectValue == nil { throw RealtimeError.invalidArgs("An update's data is an object") }
            if let hash = body["h"] {
                guard case let .string(expected) = hash else { throw RealtimeError.invalidArgs("\"h\" is a string") }
                guard RealtimeHash.of(try access.value(at: path)) == expected else {
                    throw RealtimeError("datastale", "The value changed since it was read")
                }
            }
            if action == "p" { try access.set(path, to: value) } else { try access.update(path, with: value) }
            send(RealtimeReply.response(number, status: "ok", data: ""))
        case "g":
            let query = try RealtimeQuery(object: body["q"])
            let value = try read(path, query)
            guard value.serialized().utf8.count <= Self.maxValueBytes else { throw Self.tooBig }
            send(RealtimeReply.response(number, status: "ok", data: value))
        case "q":
            try listen(number, path, body)
        case "n":
            let tag = body["t"].flatMap { $0.isNull ? nil : $0 }
            listens.removeValue(forKey: ListenKey(path: path, tag: tag))
            send(RealtimeReply.response(number, status: "ok", data: ""))
        case "o", "om":
            // Checked now as the write will be then (keys, depth, server values), so a client
            // hears of a bad onDisconnect write while it can still fix it.
            let value = body["d"] ?? .null
            let now = Double(server.node.wallMillis())
            if action == "o" {
                _ = try value.resolvingServerValues(at: path, nowMillis: now, current: { _ in .null }).normalized(at: path)
                try onDisconnect.add(.set(path, value))
            } else {
                guard case let .object(members) = value else { throw RealtimeError.invalidArgs("An update's data is an object") }
                _ = try UpdateBatch.validateUpdate(at: path, value, nowMillis: now, current: { _ in .null })
                try onDisconnect.add(.update(path, members))
            }
            send(RealtimeReply.response(number, status: "ok", data: ""))
        case "oc":
            onDisconnect.cancel(at: path)
            send(RealtimeReply.response(number, status: "ok", data: ""))
        default:
            throw RealtimeError.invalidArgs("Unknown action \(action)")
        }
    }

    static let tooBig = RealtimeError("too_big", "The data requested exceeds the maximum size that can be sent in one message")

    /// A request's path: a string (`/a/b`, `a/b`; empty or `/` for the root).
    static func path(_ value: JSONValue?) throws -> Path {
        guard case let .string(text)? = value else { throw RealtimeError.invalidArgs("A request needs a path \"p\"") }
        return try Path(segments: text.split(separator: "/", omittingEmptySubsequences: true).map(String.init))
    }

    /// What a listen or get of `query` at `path` sees now; an empty window is null. A read that
    /// takes the whole location (no limit the store applies) of more than `maxRowsRead` values
    /// is refused `too_big` before it is read, since its answer would be built whole in memory
    /// (a query with a limit reads only its window).
    func read(_ path: Path, _ query: RealtimeQuery) throws -> JSONValue {
        let (storeQuery, exact) = query.storeQuery
        if !(exact && storeQuery?.limit != nil) {
            guard try !server.node.withStoreOnQueue({ store, _ in try store.isLargeValue(at: path, rows: Self.maxRowsRead) }) else {
                throw Self.tooBig
            }
        }
        var value = try storeQuery.map { try access.query($0, at: path) } ?? access.value(at: path)
        if !exact { value = query.window(of: value) }
        if case let .object(members) = value, members.isEmpty { value = .null }
        return value
    }

    func listen(_ number: JSONValue, _ path: Path, _ body: [String: JSONValue]) throws {
        let tag = body["t"].flatMap { $0.isNull ? nil : $0 }
        if let tag, tag.numberValue == nil { throw RealtimeError.invalidArgs("A tag is a number") }
        let object = body["q"] ?? .object([:])
        // An untagged listen is of the whole location, whatever ordering it names.
        let query = tag == nil ? RealtimeQuery() : try RealtimeQuery(object: object)
        let key = ListenKey(path: path, tag: tag)
        guard listens[key] != nil || listens.count < Self.maxListens else {
            throw RealtimeError("too_big", "At most \(Self.maxListens) listens per connection")
        }
        let value = try read(path, query)
        guard value.serialized().utf8.count <= Self.maxValueBytes else { throw Self.tooBig }
        listens[key] = Listen(path: path, query: query, queryObject: object, tag: tag, lastWindow: firebaseETag(of: value))
        send(RealtimeReply.data(path, value, tag: tag))
        send(RealtimeReply.response(number, status: "ok", data: .object([:])))
    }
}
