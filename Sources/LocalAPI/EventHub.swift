import Dispatch
import HTTP
import Node
import Transport
import Tree
import Wire

/// Firebase streaming (server-sent events) for every listener of the local API. A listener
/// gets a `put` of its path's current value at once, then a `put` for every change at or below
/// its path, written locally or merged from a peer, and `keep-alive` events. Each listener's
/// unsent bytes are bounded: one that cannot keep up is closed, without slowing the node.
final class EventHub {
    let node: Node
    private var listeners: [ObjectIdentifier: Listener] = [:]

    struct Listener {
        let connection: TCPConnection
        let path: Path
        /// Unsent bytes beyond which this listener is dropped: the bound on top of whatever
        /// part of the initial snapshot is still unsent, so a large snapshot alone never
        /// closes a listener that reads.
        let maxPending: Int
        /// Chunked framing (HTTP/1.1); an HTTP/1.0 client gets the bare events, the stream
        /// ending when the connection closes.
        let chunked: Bool
    }
    private var observer: Int?
    private var keepAlive: RepeatingTimer?
    private var closed = false

    /// Unsent bytes beyond which a listener is dropped.
    static let maxPendingBytes = 4 << 20
    /// Between keep-alive events (Python's client times out after 120 s of silence).
    static let keepAliveInterval: DispatchTimeInterval = .seconds(30)

    init(node: Node) { self.node = node }

    /// Registers with the node, then calls `ready` on the node's queue; call on the node's queue.
    /// The caller must not let any listener in (nor accept any write) before `ready` runs:
    /// `addObserver` syncs onto the queue, so it is called from outside it, and until it has
    /// run, writes would give no events.
    func start(ready: @escaping () -> Void) {
        dispatchPrecondition(condition: .onQueue(node.queue))
        let hub = UncheckedSendable(self)
        let readyBox = UncheckedSendable(ready)
        DispatchQueue.global().async {
            let token = hub.value.node.addObserver { records in hub.value.recordsAdded(records) }
            hub.value.node.queue.async {
                guard !hub.value.closed else {
                    hub.value.node.removeObserver(token)
                    return
                }
                hub.value.observer = token
                readyBox.value()
            }
        }
        keepAlive = RepeatingTimer(interval: EventHub.keepAliveInterval, queue: node.queue) {
            hub.value.broadcastKeepAlive()
        }
    }

    func close() {
        closed = true
        keepAlive?.cancel()
        if let observer { node.removeObserver(observer) }
        for listener in listeners.values { listener.connection.close() }
        listeners.removeAll()
    }

    /// Answers the stream request and sends the initial snapshot, atomically on the node's queue:
    /// no write can fall between the snapshot and the registration.
    func add(_ connection: TCPConnection, path: Path, version: HTTPVersion) {
        dispatchPrecondition(condition: .onQueue(node.queue))
        let headers = [
            ("Content-Type", "text/event-stream; charset=utf-8"),
            ("Cache-Control", "no-cache"),
            ("Access-Control-Allow-Origin", "*"),
        ]
        let chunked = version != .http1_0
        connection.write(chunked ? HTTPChunkedWriter.head(status: 200, headers: headers)
                                 : HTTPChunkedWriter.closeDelimitedHead(status: 200, headers: headers))
        let value = (try? node.withStoreOnQueue { store, _ in try store.value(at: path) }) ?? .null
        connection.write(EventHub.frame("put", .object(["path": "/", "data": value]), chunked: chunked))
        let listener = Listener(connection: connection, path: path,
                                maxPending: EventHub.maxPendingBytes + connection.pendingWriteBytes, chunked: chunked)
        listeners[ObjectIdentifier(connection)] = listener
    }

    /// How many listeners are registered; call on the node's queue.
    var listenerCount: Int { listeners.count }

    func remove(_ connection: TCPConnection) {
        listeners.removeValue(forKey: ObjectIdentifier(connection))
    }

    /// One event, as a chunk or bare. LF only, one line of JSON: anything else kills Python's client.
    static func frame(_ event: String, _ data: JSONValue, chunked: Bool) -> [UInt8] {
        let bytes = Array("event: \(event)\ndata: \(data.serialized())\n\n".utf8)
        return chunked ? HTTPChunkedWriter.chunk(bytes) : bytes
    }

    private func send(_ event: String, _ data: JSONValue, to listener: Listener) {
        let connection = listener.connection
        // Closed already (too slow) while this batch of events was going out.
        guard listeners[ObjectIdentifier(connection)] != nil else { return }
        connection.write(EventHub.frame(event, data, chunked: listener.chunked))
        if connection.pendingWriteBytes > listener.maxPending {
            remove(connection)
            connection.close()
        }
    }

    private func broadcastKeepAlive() {
        for listener in listeners.values { send("keep-alive", .null, to: listener) }
    }

    /// Turns new records into events: for a pair at or below a listener's path, a `put` of the
    /// current value at the pair's path; for a pair above it, a `put` of the whole listened value.
    func recordsAdded(_ records: [Record]) {
        dispatchPrecondition(condition: .onQueue(node.queue))
        guard !listeners.isEmpty else { return }
        var cache: [Path: JSONValue] = [:]
        func value(_ path: Path) -> JSONValue {
            if let cached = cache[path] { return cached }
            let v = (try? node.withStoreOnQueue { store, _ in try store.value(at: path) }) ?? .null
            cache[path] = v
            return v
        }
        for record in records {
            guard case let .write(pairs) = record.body else { continue }
            for changed in Self.changedPaths(pairs) {
                for listener in listeners.values {
                    if let relative = changed.relative(to: listener.path) {
                        send("put", .object(["path": .string(relative.description), "data": value(changed)]), to: listener)
                    } else if changed.isAncestor(of: listener.path) {
                        send("put", .object(["path": "/", "data": value(listener.path)]), to: listener)
                    }
                }
            }
        }
    }

    /// The paths whose values a write may have changed, each once. A pair in a message stands
    /// for the whole message: one pair can move its ownership or make it disputed (Protocol.md
    /// §5.4), which changes the message's other fields too, so listeners get the message whole.
    static func changedPaths(_ pairs: [WritePair]) -> [Path] {
        var seen = Set<Path>()
        var paths = [Path]()
        for pair in pairs {
            let zone = Zone.of(pair.path)
            let path = if case .message = zone { zone.root } else { pair.path }
            if seen.insert(path).inserted { paths.append(path) }
        }
        return paths
    }
}
