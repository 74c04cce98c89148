import Crypto
import Dispatch
import HTTP
import Node
import Store
import Transport
import Tree
import WebSocket

/// The node's local HTTP API (Firebase Realtime Database REST and streaming, the SDKs' websocket
/// protocol at `/.ws` (`RealtimeSession`), node endpoints).
/// It runs on the node's own serial queue: every connection, request and event stream is handled
/// there, next to the store, so a snapshot and the registration of a listener are atomic and no
/// connection needs a thread.
public final class APIServer: @unchecked Sendable {
    let node: Node
    let token: String
    private let listener: TCPListener
    let events: EventHub
    private var connections: [ObjectIdentifier: APIConnection] = [:]
    /// Seconds a connection may sit with no request in progress before it is closed; see
    /// `closeIdleConnections`.
    let idleTimeoutSeconds: Double
    private var idleSweep: RepeatingTimer?
    /// When `closeIdleConnections` last ran.
    private var lastSweep = monotonicSeconds()

    /// Most simultaneous connections; more are closed at once, so a local program that opens
    /// sockets without end cannot exhaust the node's file descriptors.
    let maxConnections: Int
    /// The default for `maxConnections`.
    public static let defaultMaxConnections = 512
    /// The default for `idleTimeoutSeconds`.
    public static let defaultIdleTimeoutSeconds: Double = 120

    public var address: SocketAddress { listener.localAddress }

    /// Binds `address` (loopback unless the caller allowed otherwise).
    public init(node: Node, address: SocketAddress, token: String, idleTimeoutSeconds: Double = APIServer.defaultIdleTimeoutSeconds,
                maxConnections: Int = APIServer.defaultMaxConnections) throws {
        self.node = node
        self.token = token
        self.idleTimeoutSeconds = idleTimeoutSeconds
        self.maxConnections = maxConnections
        listener = try TCPListener(bind: address, queue: node.queue)
        events = EventHub(node: node, stallSeconds: idleTimeoutSeconds)
    }

    /// Where large REST bodies are written as they arrive (`SpooledBody`); set by `start`.
    private(set) var spoolDirectory = ""
    /// Large REST bodies arriving at once, each up to 256 MiB of disk: four.
    let spoolBudget = SpoolBudget(files: 4)

    /// The parser policy that lets admitted database writes have bodies up to 256 MiB, written
    /// to spool files as they arrive; other requests keep the 16 MiB in-memory limit.
    var spoolPolicy: HTTPSpoolPolicy {
        let server = UncheckedSendable(self)
        return HTTPSpoolPolicy(directory: spoolDirectory, budget: spoolBudget) { request in
            // Asked by the parser, on the node's queue, once the head is complete.
            RESTHandler.mayStream(request) && server.value.admission(request) == .granted
        }
    }

    /// Starts accepting; call on the node's queue. Connections are accepted once the event hub
    /// observes the node (a moment later, on the queue), so no listener can miss a write; until
    /// then clients wait in the listen backlog.
    public func start() {
        dispatchPrecondition(condition: .onQueue(node.queue))
        spoolDirectory = node.withStoreOnQueue { store, _ in store.spoolDirectory }
        // Bodies and scratch files of writes cut short when the node last stopped.
        SpooledBody.removeLeftovers(in: spoolDirectory)
        events.start { [self] in
            listener.start { [self] connection in
                guard connections.count < maxConnections else {
                    connection.close()
                    return
                }
                let handler = APIConnection(server: self, connection: connection)
                let key = ObjectIdentifier(handler)
                connections[key] = handler
                handler.start { [self] in connections.removeValue(forKey: key) }
            }
        }
        let server = UncheckedSendable(self)
        let sweep = DispatchTimeInterval.milliseconds(max(10, Int(idleTimeoutSeconds * 1000 / 4)))
        idleSweep = RepeatingTimer(interval: sweep, queue: node.queue) { server.value.closeIdleConnections() }
    }

    /// Closes keep-alive connections that have carried nothing for `idleTimeoutSeconds`: each
    /// holds a socket and a slot of the 512, and a client that opened connections and went away
    /// without closing them (a crashed app, a laptop put to sleep) would otherwise hold them
    /// for good. Event streams are exempt (they send keep-alives, and a stream that stops being
    /// read is closed by its byte bound), as are connections with a response still going out.
    ///
    /// A sweep that comes more than half the timeout after the one before ran late because the
    /// node's queue was busy all that time (a large write folded in one transaction takes
    /// minutes on a slow machine): no connection could be read meanwhile, so what its client
    /// sent (the next request, a websocket keep-alive) still waits unread. Such a sweep closes
    /// nothing; the next one judges the connections once they have been read.
    func closeIdleConnections() {
        dispatchPrecondition(condition: .onQueue(node.queue))
        let now = monotonicSeconds()
        defer { lastSweep = now }
        guard now - lastSweep <= idleTimeoutSeconds / 2 else { return }
        for handler in connections.values where handler.isIdle(now: now, limit: idleTimeoutSeconds) {
            handler.connection.close()
        }
    }

    /// Stops accepting and closes every connection; call on the node's queue.
    public func close() {
        dispatchPrecondition(condition: .onQueue(node.queue))
        listener.close()
        idleSweep?.cancel()
        events.close()
        for handler in connections.values { handler.connection.close() }
        connections.removeAll()
    }

    /// Whether a request may go ahead: the web app's page and assets need nothing; otherwise
    /// the API token (`Authorization: Bearer TOKEN`, or `auth=TOKEN` in the query for browsers'
    /// EventSource), from anywhere, or the web app's session cookie, from the app's own origin
    /// only (`WebOrigin`).
    func admission(_ request: HTTPRequest) -> Admission {
        if WebApp.isAsset(request) || hasToken(request) { return .granted }
        guard WebApp.hasCookie(request, server: self) else { return .unauthorized }
        // Checked before the session, which is left untouched by a refused request.
        guard WebOrigin.allowsCookie(request, server: address) else { return .forbidden }
        return WebApp.hasLiveSession(request, server: self) ? .granted : .unauthorized
    }

    private func hasToken(_ request: HTTPRequest) -> Bool {
        var presented: String?
        if let header = request.header("authorization"), header.lowercased().hasPrefix("bearer ") {
            presented = String(header.dropFirst(7)).trimmingCharacters(in: .whitespaces)
        } else if let query = request.queryValue("auth") {
            presented = query
        }
        guard let presented else { return false }
        return constantTimeEqual(Array(presented.utf8), Array(token.utf8))
    }

    /// What `admission` decided.
    enum Admission {
        case granted
        /// No valid credentials (401).
        case unauthorized
        /// The session cookie, sent by a page of another origin (403).
        case forbidden
    }
}

/// One client connection: parses requests (pipelined ones in order), answers them, and may
/// turn into an event stream.
final class APIConnection {
    unowned let server: APIServer
    let connection: TCPConnection
    private var parser: HTTPRequestParser
    private var streaming = false
    /// A large response is being written a piece at a time (`StreamedRead`): no further
    /// pipelined request is read or answered until it is done.
    private var sendingBody = false
    /// Set once a response said `Connection: close`: later pipelined requests are not answered.
    private var closing = false
    /// Reading stopped because the client does not take its responses.
    private var paused = false
    /// The Realtime Database session this connection became (a websocket at `/.ws`).
    private var realtime: RealtimeSession?
    /// When the client last sent bytes or a response was last written (monotonic seconds).
    private var lastActivity = monotonicSeconds()

    /// A body sent a piece at a time is done: the next pipelined request is read and answered,
    /// or the connection closes once its writes are out.
    private func finishBody(keepAlive: Bool) {
        sendingBody = false
        lastActivity = monotonicSeconds()
        if keepAlive {
            connection.resumeReading()
            process()
        } else {
            closing = true
            connection.shutdownAfterWrites()
        }
    }

    /// Unsent response bytes beyond which no further pipelined request is answered (and no more
    /// is read) until the client has taken them: a client that pipelines requests without
    /// reading cannot make the node hold an unbounded pile of responses.
    static let maxPendingResponseBytes = 1 << 20
    /// How often a paused connection checks whether its client caught up.
    static let drainCheckInterval: DispatchTimeInterval = .milliseconds(5)

    init(server: APIServer, connection: TCPConnection) {
        self.server = server
        self.connection = connection
        parser = HTTPRequestParser(spool: server.spoolPolicy)
    }

    func start(onClose: @escaping () -> Void) {
        connection.start(onRead: { [self] bytes in receive(bytes) }, onClose: { [self] _ in
            if streaming { server.events.remove(connection) }
            realtime?.closed()
            onClose()
        })
    }

    /// Whether the connection has carried nothing for `limit` seconds and owes nothing: not an
    /// event stream, no response waiting to be sent.
    func isIdle(now: Double, limit: Double) -> Bool {
        !streaming && !sendingBody && !paused && connection.pendingWriteBytes == 0 && now - lastActivity > limit
    }

    private func receive(_ bytes: [UInt8]) {
        lastActivity = monotonicSeconds()
        if let realtime {
            realtime.receive(bytes)
            return
        }
        guard !streaming, !closing else { return }  // an event stream's client has nothing more to say
        parser.append(bytes)
        process()
    }

    /// Answers every complete request in the parser, in order, while the client keeps up.
    private func process() {
        while !streaming && !closing && !sendingBody && realtime == nil {
            if connection.pendingWriteBytes > APIConnection.maxPendingResponseBytes {
                pauseUntilDrained()
                return
            }
            let event: HTTPParserEvent?
            do {
                event = try parser.next()
            } catch {
                // The client's fault whatever the parser's status: Firebase clients retry 5xx
                // (replaying writes), so a bad request never gets one (HTTP version, coding).
                let status = error.status >= 500 ? 400 : error.status
                send(APIResponse.error(status, error.reason), keepAlive: false)
                return
            }
            guard let event else { return }
            switch event {
            case .continueExpected:
                connection.write(HTTPResponse.continueHead)
            case let .request(request):
                handle(request)
            }
        }
    }

    private func pauseUntilDrained() {
        guard !paused else { return }
        paused = true
        connection.pauseReading()
        scheduleDrainCheck()
    }

    private func scheduleDrainCheck() {
        let box = UncheckedSendable(self)
        schedule(after: APIConnection.drainCheckInterval, on: server.node.queue) { box.value.drainCheck() }
    }

    private func drainCheck() {
        guard paused, !connection.isClosed else { return }
        guard connection.pendingWriteBytes <= APIConnection.maxPendingResponseBytes / 2 else {
            scheduleDrainCheck()
            return
        }
        paused = false
        connection.resumeReading()
        process()
    }

    private func handle(_ request: HTTPRequest) {
        if request.path == [".ws"], WebSocketHandshake.isUpgrade(request) {
            upgrade(request)
            return
        }
        if request.method == "OPTIONS" {
            send(APIResponse.preflight(), keepAlive: request.keepAlive)
            return
        }
        switch server.admission(request) {
        case .granted:
            break
        case .unauthorized:
            send(APIResponse.error(401, "Permission denied"), keepAlive: request.keepAlive)
            return
        case .forbidden:
            send(APIResponse.error(403, "Permission denied"), keepAlive: request.keepAlive)
            return
        }
        if request.method == "HEAD" {
            // A GET without its body; the length it would have is kept.
            var get = request
            get.method = "GET"
            var response = Router.handle(get, server: server)
            if !response.forbidsBody {
                response.headers.append(("Content-Length", String(response.body.count)))
                response.body = []
            }
            send(response, keepAlive: request.keepAlive)
            return
        }
        let wantsStream = request.method == "GET" && (request.header("accept") ?? "").contains("text/event-stream")
        if wantsStream, request.path == [".lanchat", "conversations"] {
            streaming = true
            server.events.conversations.add(connection, version: request.version)
            return
        }
        if wantsStream {
            switch RESTHandler.treePath(request) {
            case let .path(path):
                let query: FirebaseQuery?
                do {
                    query = try FirebaseQuery.parse(request.query.map { ($0.name, $0.value) })
                } catch {
                    send(APIResponse.error(400, "\(error)"), keepAlive: request.keepAlive)
                    return
                }
                streaming = true
                let only = request.queryValue("only").map { Set($0.split(separator: ",").map(String.init)) }
                server.events.add(connection, path: path, query: query, only: only, version: request.version)
            case let .refused(response):
                send(response, keepAlive: request.keepAlive)
            }
            return
        }
        // A request (not a stream left open, nor a look at presence, which pages poll) is the
        // user at work: not away (Protocol.md §5.7).
        if request.path.first != LivePaths.presenceRoot { server.node.noteLocalActivityOnQueue() }
        if let spool = request.spooledBody {
            answerStreamedWrite(request, spool)
            return
        }
        if readsTree(request) {
            // Whether the value is large and the read itself under one read lock of the store,
            // not one per statement (a small GET made 8 `fcntl` calls, a tenth of the samples of
            // client and node on one core). Should the transaction not begin, the request is
            // answered without it. `answer`: the response once answered, nil when streamed.
            var answer: HTTPResponse??
            let answerIt = { [self] in streamLargeRead(request) ? nil : Router.handle(request, server: server) }
            try? server.node.withStoreOnQueue { store, _ in try store.readTransaction { answer = .some(answerIt()) } }
            if let response = answer ?? answerIt() { send(response, keepAlive: request.keepAlive) }
            return
        }
        if streamLargeRead(request) { return }
        let response = Router.handle(request, server: server)
        send(response, keepAlive: request.keepAlive)
    }

    /// A GET of the tree's values (not of the node's own `.lanchat` endpoints): it only reads.
    /// The path is parsed where it is answered; one that does not parse reads nothing.
    private func readsTree(_ request: HTTPRequest) -> Bool {
        request.method == "GET" && request.path.first != ".lanchat" && request.path.last?.hasSuffix(".json") == true
    }

    /// Turns the connection into a Realtime Database session (`ws://HOST:PORT/.ws?v=5&ns=NAME`),
    /// or refuses a handshake that is not a valid one. No token is asked for here: the
    /// session asks for it in its own `auth` request before it answers anything.
    private func upgrade(_ request: HTTPRequest) {
        switch WebSocketHandshake.response(to: request) {
        case let .refused(response):
            send(response, keepAlive: false)
        case let .accepted(response):
            let session = RealtimeSession(server: server, connection: connection, request: request)
            session.answered = { [unowned self] in lastActivity = monotonicSeconds() }
            realtime = session
            connection.write(response.serialized())
            session.start()
            let rest = parser.takeRemainingBytes()
            if !rest.isEmpty { session.receive(rest) }
        }
    }

    /// Answers a plain GET of a large location by writing the value while it is read
    /// (`StreamedRead`), chunked; returns false for any other request, answered as usual. Such
    /// a response carries an ETag only when the client asks for one (`X-Firebase-ETag: true`,
    /// `if-none-match`), since it takes a first pass over the value.
    private func streamLargeRead(_ request: HTTPRequest) -> Bool {
        guard request.method == "GET", request.path.first != ".lanchat", request.path.last?.hasSuffix(".json") == true,
              request.queryValue("shallow") != "true", request.queryValue("print") != "pretty",
              case let .path(path) = RESTHandler.treePath(request),
              (try? FirebaseQuery.parse(request.query.map { ($0.name, $0.value) })) == .some(nil) else { return false }
        let node = server.node
        // Counted on the store's own connection; only a large value opens a snapshot.
        guard let snapshot = try? node.withStoreOnQueue({ store, _ in try store.isLargeValue(at: path) ? TreeSnapshot.open(store) : nil })
        else { return false }
        let chunked = request.version != .http1_0
        let keepAlive = request.keepAlive && chunked
        guard let read = StreamedRead(connection: connection, nodeQueue: node.queue, snapshot: snapshot, path: path,
                                      live: node.liveEntriesOnQueue(for: path), chunked: chunked,
                                      stallSeconds: server.idleTimeoutSeconds) else {
            send(StreamedRead.refusal(), keepAlive: request.keepAlive)
            return true
        }
        sendingBody = true
        connection.pauseReading()
        let finish = { [self] in finishBody(keepAlive: keepAlive) }
        let begin = { [self] (etag: String?) in
            if let etag, let match = request.header("if-none-match"), match == etag {
                var response = HTTPResponse(status: 304, headers: APIResponse.common + [("ETag", etag)])
                response.headers.append(("Connection", keepAlive ? "keep-alive" : "close"))
                connection.write(response.serialized())
                finish()
                return
            }
            let headers = APIResponse.common + [("Content-Type", APIResponse.jsonType)] + (etag.map { [("ETag", $0)] } ?? [])
                + [("Connection", keepAlive ? "keep-alive" : "close")]
            connection.write(chunked ? HTTPChunkedWriter.head(status: 200, headers: headers)
                                     : HTTPChunkedWriter.closeDelimitedHead(status: 200, headers: headers))
            read.send(prefix: [], suffix: []) { [self] in
                if chunked { connection.write(HTTPChunkedWriter.end()) }
                finish()
            }
        }
        if request.header("x-firebase-etag") == "true" || request.header("if-none-match") != nil {
            read.etag { begin($0) }
        } else {
            begin(nil)
        }
        return true
    }

    /// Writes a spooled body (`RESTHandler.streamedWrite`) and answers: a PUT with its
    /// location read (streamed when large), a PATCH with its body sent back from the file a
    /// piece at a time as the client takes it. The file is removed once answered.
    private func answerStreamedWrite(_ request: HTTPRequest, _ spool: SpooledBody) {
        switch RESTHandler(node: server.node).streamedWrite(request, spool) {
        case let .response(response):
            spool.remove()
            send(response, keepAlive: request.keepAlive)
        case let .location(path):
            spool.remove()
            var get = request
            get.method = "GET"
            get.query = []
            get.spooledBody = nil
            get.headers.removeAll { $0.name.lowercased() == "if-none-match" || $0.name.lowercased() == "x-firebase-etag" }
            if streamLargeRead(get) { return }
            do {
                send(APIResponse.json(TaggedJSON(try TreeAccess(node: server.node).value(at: path))), keepAlive: request.keepAlive)
            } catch {
                send(APIResponse.failure(error), keepAlive: request.keepAlive)
            }
        case .body:
            echo(spool, keepAlive: request.keepAlive)
        }
    }

    /// Sends the file of `spool` as a JSON response, a piece at a time while the client takes
    /// them (at most `maxPendingResponseBytes` unsent), then removes it.
    private func echo(_ spool: SpooledBody, keepAlive: Bool) {
        let reader: SpooledBodyReader
        do {
            reader = try spool.reader()
        } catch {
            spool.remove()
            send(APIResponse.failure(error), keepAlive: keepAlive)
            return
        }
        let headers = APIResponse.common + [("Content-Type", APIResponse.jsonType), ("Content-Length", String(spool.count)),
                                            ("Connection", keepAlive ? "keep-alive" : "close")]
        connection.write(HTTPResponse(status: 200, headers: headers).serialized())
        sendingBody = true
        connection.pauseReading()
        pump(reader, spool, keepAlive: keepAlive)
    }

    private func pump(_ reader: SpooledBodyReader, _ spool: SpooledBody, keepAlive: Bool) {
        guard !connection.isClosed else {
            spool.remove()
            return
        }
        do {
            while connection.pendingWriteBytes < APIConnection.maxPendingResponseBytes {
                guard let piece = try reader.next() else {
                    spool.remove()
                    finishBody(keepAlive: keepAlive)
                    return
                }
                connection.write(Array(piece))
                lastActivity = monotonicSeconds()
            }
        } catch {
            spool.remove()
            connection.close()
            return
        }
        let box = UncheckedSendable((self, reader))
        schedule(after: APIConnection.drainCheckInterval, on: server.node.queue) {
            box.value.0.pump(box.value.1, spool, keepAlive: keepAlive)
        }
    }

    private func send(_ response: HTTPResponse, keepAlive: Bool) {
        var response = response
        response.headers.append(("Connection", keepAlive ? "keep-alive" : "close"))
        connection.write(response.serialized())
        lastActivity = monotonicSeconds()
        if !keepAlive {
            closing = true
            connection.shutdownAfterWrites()
        }
    }
}
