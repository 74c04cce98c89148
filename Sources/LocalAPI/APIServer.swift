import Crypto
import Dispatch
import HTTP
import Node
import Transport
import Tree

/// The node's local HTTP API (Firebase Realtime Database REST and streaming, node endpoints).
/// It runs on the node's own serial queue: every connection, request and event stream is handled
/// there, next to the store, so a snapshot and the registration of a listener are atomic and no
/// connection needs a thread.
public final class APIServer: @unchecked Sendable {
    let node: Node
    let token: String
    private let listener: TCPListener
    let events: EventHub
    private var connections: [ObjectIdentifier: APIConnection] = [:]

    /// Most simultaneous connections; more are closed at once.
    static let maxConnections = 512

    public var address: SocketAddress { listener.localAddress }

    /// Binds `address` (loopback unless the caller allowed otherwise).
    public init(node: Node, address: SocketAddress, token: String) throws {
        self.node = node
        self.token = token
        listener = try TCPListener(bind: address, queue: node.queue)
        events = EventHub(node: node)
    }

    /// Starts accepting; call on the node's queue.
    public func start() {
        dispatchPrecondition(condition: .onQueue(node.queue))
        events.start()
        listener.start { [self] connection in
            guard connections.count < APIServer.maxConnections else {
                connection.close()
                return
            }
            let handler = APIConnection(server: self, connection: connection)
            let key = ObjectIdentifier(handler)
            connections[key] = handler
            handler.start { [self] in connections.removeValue(forKey: key) }
        }
    }

    /// Stops accepting and closes every connection; call on the node's queue.
    public func close() {
        dispatchPrecondition(condition: .onQueue(node.queue))
        listener.close()
        events.close()
        for handler in connections.values { handler.connection.close() }
        connections.removeAll()
    }

    /// `Authorization: Bearer TOKEN`, or `auth=TOKEN` in the query for browsers' EventSource.
    func isAuthorized(_ request: HTTPRequest) -> Bool {
        var presented: String?
        if let header = request.header("authorization"), header.lowercased().hasPrefix("bearer ") {
            presented = String(header.dropFirst(7)).trimmingCharacters(in: .whitespaces)
        } else if let query = request.queryValue("auth") {
            presented = query
        }
        guard let presented else { return false }
        return constantTimeEqual(Array(presented.utf8), Array(token.utf8))
    }
}

/// One client connection: parses requests (pipelined ones in order), answers them, and may
/// turn into an event stream.
final class APIConnection {
    unowned let server: APIServer
    let connection: TCPConnection
    private var parser = HTTPRequestParser()
    private var streaming = false
    /// Set once a response said `Connection: close`: later pipelined requests are not answered.
    private var closing = false

    init(server: APIServer, connection: TCPConnection) {
        self.server = server
        self.connection = connection
    }

    func start(onClose: @escaping () -> Void) {
        connection.start(onRead: { [self] bytes in receive(bytes) }, onClose: { [self] _ in
            if streaming { server.events.remove(connection) }
            onClose()
        })
    }

    private func receive(_ bytes: [UInt8]) {
        guard !streaming, !closing else { return }  // an event stream's client has nothing more to say
        parser.append(bytes)
        while !streaming && !closing {
            let event: HTTPParserEvent?
            do {
                event = try parser.next()
            } catch {
                send(APIResponse.error(error.status, error.reason), keepAlive: false)
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

    private func handle(_ request: HTTPRequest) {
        if request.method == "OPTIONS" {
            send(APIResponse.preflight(), keepAlive: request.keepAlive)
            return
        }
        guard server.isAuthorized(request) else {
            send(APIResponse.error(401, "Permission denied"), keepAlive: request.keepAlive)
            return
        }
        let wantsStream = request.method == "GET" && (request.header("accept") ?? "").contains("text/event-stream")
        if wantsStream {
            switch RESTHandler.treePath(request) {
            case let .path(path):
                streaming = true
                server.events.add(connection, path: path)
            case let .refused(response):
                send(response, keepAlive: request.keepAlive)
            }
            return
        }
        let response = Router.handle(request, server: server)
        send(response, keepAlive: request.keepAlive)
    }

    private func send(_ response: HTTPResponse, keepAlive: Bool) {
        var response = response
        response.headers.append(("Connection", keepAlive ? "keep-alive" : "close"))
        connection.write(response.serialized())
        if !keepAlive {
            closing = true
            connection.shutdownAfterWrites()
        }
    }
}
