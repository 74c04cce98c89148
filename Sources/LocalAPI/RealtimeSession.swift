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
    private(set) var authenticated = false {
        didSet {
            let bound = authenticated ? Self.maxMessageBytes : Self.maxUnauthenticatedMessageBytes
            parser.maxMessageBytes = bound
            assembler.maxMessageBytes = bound
        }
    }
    /// Called once a message has been handled: the connection is active until then, however
    /// long the answer took (a write of 16 MB), and is judged idle from then on.
    var answered: (() -> Void)?
    var listens: [ListenKey: Listen] = [:]
    var onDisconnect = RealtimeOnDisconnect()
    /// A close frame went out (or came in): nothing more is read or sent.
    private(set) var closing = false
    /// The socket is gone and the onDisconnect writes are made.
    private(set) var finished = false

    /// The largest protocol message taken (a websocket message, or the pieces of a split one,
    /// together): a write of the largest value the tree takes (16 MiB) plus its envelope.
    static let maxMessageBytes = (16 << 20) + (1 << 20)
    /// The largest message taken before the client authenticates: room for stats and an
    /// `auth` with a mock user token.
    static let maxUnauthenticatedMessageBytes = 64 << 10
    /// What a message's JSON may hold: anything the message bound allows, and nesting well past
    /// the tree's 32 levels, so that a value the tree refuses (a string or a write too large, a
    /// path too deep) is refused by its request's answer, not by closing the connection.
    static let messageLimits = JSONLimits(maxBytes: maxMessageBytes, maxDepth: 128, maxStringBytes: maxMessageBytes)
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

    var access: TreeAccess { TreeAccess(node: server.node) }

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
        defer { answered?() }
        let message: RealtimeMessage
        do {
            message = try RealtimeMessage.parse(bytes, limits: Self.messageLimits)
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
            } catch let error as Node.LiveWriteError {
                switch error {
                case .permissionDenied:
                    send(RealtimeReply.failure(number, RealtimeError("permission_denied", "This node's user may not write there")))
                case let .refused(why):
                    send(RealtimeReply.failure(number, .invalidArgs(why)))
                }
            } catch {
                // A failure of the node itself (its store, its disk), not of the request.
                send(RealtimeReply.failure(number, RealtimeError("unavailable", "\(error)")))
            }
        }
    }

    // MARK: - Output and the end

    /// Sends one protocol message, split into pieces when long. A client that leaves more than
    /// `maxPendingBytes` unread is cut off (its onDisconnect writes are then made).
    func send(_ message: JSONValue) {
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
