import Crypto
import Dispatch
import Foundation
import HTTP
import Node
import Realtime
import Store
import Transport
import Tree
import WebSocket
import Wire

/// One client of the Firebase Realtime Database protocol (the one the Web, iOS and Android SDKs
/// speak), on a connection of the API port upgraded to a websocket at `/.ws`.
///
/// Runs on the node's queue like every API connection. The websocket codec and the protocol's
/// framing and messages are pure (`WebSocketParser`, `RealtimeFrameAssembler`,
/// `RealtimeMessage`); this class does their IO: reads and writes through `TreeAccess` (the
/// REST handler's paths), listens fed by `EventHub` (as SSE streams are), and the
/// onDisconnect writes, made when the socket ends however it ends.
///
/// The websocket itself is open to any page (the SDKs cannot put a token in its URL); nothing
/// but `s` (stats) is answered until an `auth`/`gauth` request presents the node's API token
/// (`RealtimeCredential`). The session cookie of the web chat is not honoured here: a page of any
/// origin can open a websocket, and the browser would attach the cookie to it.
final class RealtimeSession {
    unowned let server: APIServer
    let connection: TCPConnection
    private let host: String
    private var parser = WebSocketParser(maxMessageBytes: RealtimeSession.maxUnauthenticatedMessageBytes)
    private var assembler = RealtimeFrameAssembler(maxMessageBytes: RealtimeSession.maxUnauthenticatedMessageBytes)
    /// Whether the client presented the node's token. Until it has, its messages are held to
    /// `maxUnauthenticatedMessageBytes`: the websocket opens without the token, and a local
    /// program that opens the 512 connections the API allows must not make the node hold a
    /// large message on each.
    private var authenticated = false {
        didSet {
            let bound = authenticated ? Self.maxMessageBytes : Self.maxUnauthenticatedMessageBytes
            parser.maxMessageBytes = bound
            assembler.maxMessageBytes = bound
        }
    }
    private var listens: [ListenKey: Listen] = [:]
    private var onDisconnect = RealtimeOnDisconnect()
    /// A close frame went out (or came in): nothing more is read or sent.
    private var closing = false
    /// The socket is gone and the onDisconnect writes are made.
    private var finished = false

    /// The largest protocol message taken (a websocket message, or the pieces of a split one,
    /// together): a write of the largest value the tree takes (16 MiB) plus its envelope.
    static let maxMessageBytes = (16 << 20) + (1 << 20)
    /// The largest message taken before the client authenticates: room for stats and an
    /// `auth` with a mock user token.
    static let maxUnauthenticatedMessageBytes = 64 << 10
    /// Unsent bytes beyond which a client that does not read is cut off.
    static let maxPendingBytes = 64 << 20
    /// The largest value sent in one message; a larger read or listen is answered `too_big`.
    static let maxValueBytes = 48 << 20
    /// Most values (leaves, or messages) a read of a whole location may take; see `read`.
    static let maxRowsRead = 200_000
    /// Most listens one session may hold.
    static let maxListens = 1000

    /// A listen as the SDKs name it: its path and its tag (none for a listen of a location).
    struct ListenKey: Hashable {
        let path: Path
        let tag: JSONValue?
    }

    struct Listen {
        let path: Path
        let query: RealtimeQuery
        /// The query object as the client sent it, echoed when the listen is revoked.
        let queryObject: JSONValue
        let tag: JSONValue?
        /// The ETag of the window last sent (tagged queries only), so unchanged windows send nothing.
        var lastWindow: String?
    }

    init(server: APIServer, connection: TCPConnection, request: HTTPRequest) {
        self.server = server
        self.connection = connection
        let given = request.header("host") ?? ""
        let printable = given.utf8.count <= 255 && given.unicodeScalars.allSatisfy { $0.value > 0x20 && $0.value < 0x7F }
        host = printable && !given.isEmpty ? given : "\(server.address)"
    }

    private var access: TreeAccess { TreeAccess(node: server.node) }

    /// Sends the hello and starts taking changes; the 101 response has been written.
    func start() {
        dispatchPrecondition(condition: .onQueue(server.node.queue))
        let session = Base64URL.encode(secureRandomBytes(12))
        send(RealtimeReply.handshake(timestampMillis: server.node.wallMillis(), host: host, session: session))
        server.events.watch(self) { [weak self] changes in self?.changed(changes) }
    }

    // MARK: - Input

    func receive(_ bytes: [UInt8]) {
        dispatchPrecondition(condition: .onQueue(server.node.queue))
        guard !closing, !finished else { return }
        parser.append(bytes)
        while !closing {
            let event: WebSocketEvent?
            do { event = try parser.next() } catch {
                close(error.code, error.reason)
                return
            }
            guard let event else { return }
            switch event {
            case let .text(text):
                let message: [UInt8]?
                do { message = try assembler.receive(text) } catch {
                    close(.messageTooBig, error.message)
                    return
                }
                if let message { handle(message) }
            case .binary:
                close(.unsupportedData, "The protocol's messages are text")
            case let .ping(payload):
                connection.write(WebSocketFrameWriter.frame(.pong, payload))
            case .pong:
                break
            case .close:
                closing = true
                connection.write(WebSocketFrameWriter.close(.normal))
                connection.shutdownAfterWrites()
            }
        }
    }

    private func handle(_ bytes: [UInt8]) {
        let message: RealtimeMessage
        do {
            message = try RealtimeMessage.parse(bytes, limits: JSONLimits(maxBytes: RealtimeSession.maxMessageBytes))
        } catch {
            send(RealtimeReply.shutdown(error.message))
            close(.policyViolation, "Not a Realtime Database message")
            return
        }
        switch message {
        case .ping: send(RealtimeReply.pong)
        case .control: break
        case let .request(number, action, body): request(number, action, body)
        }
    }

    private func request(_ number: JSONValue, _ action: String, _ body: [String: JSONValue]) {
        switch action {
        case "s":
            send(RealtimeReply.response(number, status: "ok", data: ""))
        case "auth", "gauth":
            guard case let .string(credential)? = body["cred"] else {
                send(RealtimeReply.failure(number, .invalidArgs("auth needs a credential \"cred\"")))
                return
            }
            if RealtimeCredential.accepts(credential, token: server.token) {
                authenticated = true
                send(RealtimeReply.response(number, status: "ok", data: .object(["auth": .null, "expires": .null])))
            } else {
                let was = authenticated
                authenticated = false
                send(RealtimeReply.response(number, status: "invalid_token", data: "Invalid token: this node's API token is needed"))
                if was { revokeListens() }
            }
        case "appcheck", "unappeck":
            // App Check tokens (and their withdrawal, which the SDKs spell so): a node has no
            // App Check; the API token is what admits a client.
            send(RealtimeReply.response(number, status: "ok", data: ""))
        case "unauth":
            authenticated = false
            revokeListens()
            send(RealtimeReply.response(number, status: "ok", data: ""))
        default:
            guard authenticated else {
                send(RealtimeReply.response(number, status: "permission_denied", data: "Permission denied: authenticate with the node's API token"))
                return
            }
            do {
                try perform(number, action, body)
            } catch let error as RealtimeError {
                send(RealtimeReply.failure(number, error))
            } catch let error as TreeError {
                send(RealtimeReply.failure(number, .invalidArgs("\(error)")))
            } catch let error as FirebaseQueryError {
                send(RealtimeReply.failure(number, .invalidArgs("\(error)")))
            } catch StoreError.permissionDenied(let path) {
                send(RealtimeReply.failure(number, RealtimeError("permission_denied", "This node's user may not write \(path)")))
            } catch let error as RecordError {
                send(RealtimeReply.failure(number, .invalidArgs("\(error)")))
            } catch {
                // A failure of the node itself (its store, its disk), not of the request.
                send(RealtimeReply.failure(number, RealtimeError("unavailable", "\(error)")))
            }
        }
    }

    private func perform(_ number: JSONValue, _ action: String, _ body: [String: JSONValue]) throws {
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
    private func read(_ path: Path, _ query: RealtimeQuery) throws -> JSONValue {
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

    private func listen(_ number: JSONValue, _ path: Path, _ body: [String: JSONValue]) throws {
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

    /// Ends every listen with `c` (listen revoked), as when the credentials that allowed them go.
    /// The SDK finds the listen by its path and, for a query, the list of its query objects
    /// (a listen of a whole location names none).
    private func revokeListens() {
        for listen in listens.values {
            var body: [String: JSONValue] = ["p": .string(RealtimeReply.wirePath(listen.path))]
            if listen.tag != nil { body["q"] = .array([listen.queryObject]) }
            send(RealtimeReply.push("c", body))
        }
        listens.removeAll()
    }

    // MARK: - Changes

    /// New records changed `changes`: each listen at or around them gets the new data. A listen
    /// of a location gets `d` of the one path that changed below it, `m` of all of them when
    /// several did (one merge, applied at once), or `d` of itself for a change at or above it;
    /// a query gets its window again, whole, when it differs from the one last sent.
    private func changed(_ changes: [Path]) {
        dispatchPrecondition(condition: .onQueue(server.node.queue))
        guard !closing, !finished, authenticated, !listens.isEmpty else { return }
        var cache: [Path: JSONValue] = [:]
        func value(_ path: Path) -> JSONValue {
            if let cached = cache[path] { return cached }
            let v = (try? access.value(at: path)) ?? .null
            cache[path] = v
            return v
        }
        for (key, listen) in listens {
            guard !closing else { return }
            if listen.tag == nil {
                if changes.contains(where: { $0.isAncestorOrSelf(of: listen.path) }) {
                    send(RealtimeReply.data(listen.path, value(listen.path), tag: nil))
                    continue
                }
                let below = changes.filter { listen.path.isAncestor(of: $0) }
                if below.count == 1 {
                    send(RealtimeReply.data(below[0], value(below[0]), tag: nil))
                } else if below.count > 1 {
                    // One merge, so that what one record changed together reaches the app together.
                    var members: [String: JSONValue] = [:]
                    for change in below {
                        members[RealtimeReply.wirePath(change.relative(to: listen.path) ?? change)] = value(change)
                    }
                    send(RealtimeReply.data(listen.path, .object(members), tag: nil, merge: true))
                }
                continue
            }
            guard changes.contains(where: { $0.isAncestorOrSelf(of: listen.path) || listen.path.isAncestor(of: $0) }) else { continue }
            guard let window = try? read(listen.path, listen.query) else { continue }
            let etag = firebaseETag(of: window)
            guard etag != listen.lastWindow else { continue }
            listens[key]?.lastWindow = etag
            send(RealtimeReply.data(listen.path, window, tag: listen.tag))
        }
    }

    // MARK: - Output and the end

    /// Sends one protocol message, split into pieces when long. A client that leaves more than
    /// `maxPendingBytes` unread is cut off (its onDisconnect writes are then made).
    private func send(_ message: JSONValue) {
        guard !closing, !finished else { return }
        for piece in RealtimeFrames.split(utf8: Array(message.serialized().utf8)) {
            connection.write(WebSocketFrameWriter.frame(.text, piece))
        }
        if connection.pendingWriteBytes > Self.maxPendingBytes { connection.close() }
    }

    /// Ends the websocket with a close frame: the session is over once it is sent.
    private func close(_ code: WebSocketCloseCode, _ reason: String) {
        guard !closing else { return }
        closing = true
        connection.write(WebSocketFrameWriter.close(code, reason: reason))
        connection.shutdownAfterWrites()
    }

    /// The socket closed (a close handshake, an error, or the client vanished): stop taking
    /// changes and make the onDisconnect writes, as signed writes that reach every peer.
    func closed() {
        dispatchPrecondition(condition: .onQueue(server.node.queue))
        guard !finished else { return }
        finished = true
        server.events.unwatch(self)
        listens.removeAll()
        for operation in onDisconnect.operations {
            switch operation {
            case let .set(path, value): try? access.set(path, to: value)
            case let .update(path, members): try? access.update(path, with: .object(members))
            }
        }
    }
}
