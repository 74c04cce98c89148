import Dispatch
import HTTP
import Node
import Store
import Transport
import Tree
import Wire

/// Firebase streaming (server-sent events) for every listener of the local API. A listener
/// gets a `put` of its path's current value at once, then a `put` for every change at or below
/// its path, written locally or merged from a peer, and `keep-alive` events. Each listener's
/// unsent bytes are bounded: one that cannot keep up is closed, without slowing the node.
final class EventHub {
    let node: Node
    /// The streams of the conversation list (`/.lanchat/conversations`), fed the same records.
    let conversations: ConversationStreams
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
        /// The query the stream was opened with (`orderBy`, ranges, a limit): the listener sees
        /// the query's window of the location's children instead of the location.
        let query: FirebaseQuery?
        /// The children last sent for a query, by key; nil while the window is not an object
        /// (nothing there, or a primitive), when every change is sent as the window whole.
        var window: Set<String>?
        /// Events held back while the first `put` is still being written (`StreamedRead`), and
        /// their size; nil once it is written.
        var backlog: [[UInt8]]?
        var backlogBytes = 0
        /// Children of the location the listener takes (`only=a,b`, lanchat's own parameter):
        /// the web chat follows a conversation's typing flags and receipts in one stream without
        /// its messages (a browser holds at most 6 connections to a host). Nil: the whole location.
        var only: Set<String>? = nil
    }
    /// Others told of every batch of changed paths (the Realtime Database sessions), by owner.
    private var watchers: [ObjectIdentifier: ([Path]) -> Void] = [:]
    private var observer: Int?
    private var liveObserver: Int?
    private var keepAlive: RepeatingTimer?
    private var closed = false

    /// Unsent bytes beyond which a listener is dropped.
    static let maxPendingBytes = 4 << 20
    /// Between keep-alive events (Python's client times out after 120 s of silence).
    static let keepAliveInterval: DispatchTimeInterval = .seconds(30)

    /// How long a client may take nothing of a first `put` that is streamed (`StreamedRead`).
    private let stallSeconds: Double

    init(node: Node, stallSeconds: Double) {
        self.node = node
        self.stallSeconds = stallSeconds
        conversations = ConversationStreams(node: node)
    }

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
            let liveToken = hub.value.node.addLiveObserver { paths, readMarks in hub.value.liveChanged(paths, readMarksMoved: readMarks) }
            hub.value.node.queue.async {
                guard !hub.value.closed else {
                    hub.value.node.removeObserver(token)
                    hub.value.node.removeLiveObserver(liveToken)
                    return
                }
                hub.value.observer = token
                hub.value.liveObserver = liveToken
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
        watchers.removeAll()
        if let liveObserver { node.removeLiveObserver(liveObserver) }
        for listener in listeners.values { listener.connection.close() }
        listeners.removeAll()
        conversations.close()
    }

    /// Answers the stream request and sends the initial snapshot, atomically on the node's queue:
    /// no write can fall between the snapshot and the registration.
    func add(_ connection: TCPConnection, path: Path, query: FirebaseQuery? = nil, only: Set<String>? = nil, version: HTTPVersion) {
        dispatchPrecondition(condition: .onQueue(node.queue))
        let snapshot = query != nil || only != nil ? nil
            : try? node.withStoreOnQueue({ store, _ in try store.isLargeValue(at: path) ? TreeSnapshot.open(store) : nil })
        var read: StreamedRead?
        if let snapshot {
            read = StreamedRead(connection: connection, nodeQueue: node.queue, snapshot: snapshot, path: path,
                                live: node.liveEntriesOnQueue(for: path), chunked: version != .http1_0,
                                stallSeconds: stallSeconds)
            guard read != nil else {
                var refusal = StreamedRead.refusal()
                refusal.headers.append(("Connection", "close"))
                connection.write(refusal.serialized())
                connection.shutdownAfterWrites()
                return
            }
        }
        let headers = [
            ("Content-Type", "text/event-stream; charset=utf-8"),
            ("Cache-Control", "no-cache"),
            ("Access-Control-Allow-Origin", "*"),
        ]
        let chunked = version != .http1_0
        connection.write(chunked ? HTTPChunkedWriter.head(status: 200, headers: headers)
                                 : HTTPChunkedWriter.closeDelimitedHead(status: 200, headers: headers))
        if let read {
            addStreaming(connection, path: path, read: read, chunked: chunked)
            return
        }
        let value = only.map { readChildren(path, $0) } ?? self.read(path, query)
        connection.write(EventHub.frame("put", .object(["path": "/", "data": value]), chunked: chunked))
        let listener = Listener(connection: connection, path: path,
                                maxPending: EventHub.maxPendingBytes + connection.pendingWriteBytes, chunked: chunked,
                                query: query, window: EventHub.keys(of: value), only: only)
        listeners[ObjectIdentifier(connection)] = listener
    }

    /// Registers a listener whose first `put` is large: its data is written while it is read
    /// (`read`, from a snapshot taken now, with the registration, so no write falls between them), and the
    /// events of writes made meanwhile wait in its backlog until it is written.
    private func addStreaming(_ connection: TCPConnection, path: Path, read: StreamedRead, chunked: Bool) {
        let id = ObjectIdentifier(connection)
        listeners[id] = Listener(connection: connection, path: path, maxPending: EventHub.maxPendingBytes + StreamedRead.pieceSize,
                                 chunked: chunked, query: nil, window: nil, backlog: [])
        // The event's JSON is {"data":...,"path":"/"}: members in key order, as `frame` writes them.
        read.send(prefix: Array("event: put\ndata: {\"data\":".utf8), suffix: Array(",\"path\":\"/\"}\n\n".utf8)) { [self] in
            guard let listener = listeners[id], let backlog = listener.backlog else { return }
            listeners[id]?.backlog = nil
            listeners[id]?.backlogBytes = 0
            for frame in backlog { connection.write(frame) }
            if connection.pendingWriteBytes > listener.maxPending {
                remove(connection)
                connection.close()
            }
        }
    }

    /// Calls `body` on the node's queue with the paths each new batch of records changed
    /// (`changedPaths`), written locally or merged from a peer, until `unwatch(owner)`.
    func watch(_ owner: AnyObject, _ body: @escaping ([Path]) -> Void) {
        dispatchPrecondition(condition: .onQueue(node.queue))
        watchers[ObjectIdentifier(owner)] = body
    }

    func unwatch(_ owner: AnyObject) {
        watchers.removeValue(forKey: ObjectIdentifier(owner))
    }

    /// How many listeners are registered; call on the node's queue.
    var listenerCount: Int { listeners.count + conversations.listenerCount }

    func remove(_ connection: TCPConnection) {
        listeners.removeValue(forKey: ObjectIdentifier(connection))
        conversations.remove(connection)
    }

    /// One event, as a chunk or bare. LF only, one line of JSON: anything else kills Python's client.
    static func frame(_ event: String, _ data: JSONValue, chunked: Bool) -> [UInt8] {
        let bytes = Array("event: \(event)\ndata: \(data.serialized())\n\n".utf8)
        return chunked ? HTTPChunkedWriter.chunk(bytes) : bytes
    }

    private func send(_ event: String, _ data: JSONValue, to listener: Listener) {
        let connection = listener.connection
        let id = ObjectIdentifier(connection)
        // Closed already (too slow) while this batch of events was going out.
        guard let current = listeners[id] else { return }
        let frame = EventHub.frame(event, data, chunked: listener.chunked)
        if current.backlog != nil {
            listeners[id]?.backlog?.append(frame)
            listeners[id]?.backlogBytes += frame.count
            if current.backlogBytes + frame.count > listener.maxPending {
                remove(connection)
                connection.close()
            }
            return
        }
        connection.write(frame)
        if connection.pendingWriteBytes > listener.maxPending {
            remove(connection)
            connection.close()
        }
    }

    private func broadcastKeepAlive() {
        for listener in listeners.values { send("keep-alive", .null, to: listener) }
        conversations.keepAlive()
    }

    /// The value a listener sees at `path`: the location's, or its query's window.
    private func read(_ path: Path, _ query: FirebaseQuery?) -> JSONValue {
        let access = TreeAccess(node: node)
        return (try? query.map { try access.query($0, at: path) } ?? access.value(at: path)) ?? .null
    }

    /// The children named in `only` of the location at `path`, each read alone (a
    /// conversation's messages are never read for its typing flags).
    private func readChildren(_ path: Path, _ only: Set<String>) -> JSONValue {
        var kept: [String: JSONValue] = [:]
        for key in only {
            guard let child = try? path.appending(key) else { continue }
            let value = read(child, nil)
            if value != .null { kept[key] = value }
        }
        return kept.isEmpty ? .null : .object(kept)
    }

    /// The children of a window, or nil when it is not an object.
    static func keys(of window: JSONValue) -> Set<String>? {
        guard case let .object(members) = window else { return nil }
        return Set(members.keys)
    }

    /// Turns new records into events: for a pair at or below a listener's path, a `put` of the
    /// current value at the pair's path; for a pair above it, a `put` of the whole listened value.
    /// A listener with a query gets only what changes inside its window (`windowChanges`).
    func recordsAdded(_ records: [Record]) {
        dispatchPrecondition(condition: .onQueue(node.queue))
        conversations.recordsAdded(records)
        guard !listeners.isEmpty || !watchers.isEmpty else { return }
        var changes: [Path] = []
        var seen = Set<Path>()
        for record in records {
            if let conversation = record.privateConversationID {
                // What a private record changes is known only once decrypted: the conversation.
                if let changed = try? Path(segments: ["conversations", conversation]), seen.insert(changed).inserted { changes.append(changed) }
                continue
            }
            switch record.body {
            case let .write(pairs):
                for changed in Self.changedPaths(pairs) where seen.insert(changed).inserted { changes.append(changed) }
            case .largeWrite:
                // Its pairs are in chunks, not in the record: the listeners at, above or below
                // where they lie read their locations again (all of them if the store no longer
                // knows where). A message stands for itself whole, as in `changedPaths`.
                let scope = node.withStoreOnQueue { store, _ in store.largeWriteScope(of: record.id) } ?? .root
                let zone = Zone.of(scope)
                let changed = if case .message = zone { zone.root } else { scope }
                if seen.insert(changed).inserted { changes.append(changed) }
            default:
                continue
            }
        }
        send(changes)
    }

    /// Live values or presence changed at `paths` (NodeLive.swift): events as for records.
    /// A receipt of the node's own user from another of its nodes moved the read marks of
    /// `readMarksMoved`, so those conversations' summaries go out again too.
    func liveChanged(_ paths: [Path], readMarksMoved: [String] = []) {
        dispatchPrecondition(condition: .onQueue(node.queue))
        for conversation in readMarksMoved { conversations.changed(conversation) }
        guard !listeners.isEmpty || !watchers.isEmpty else { return }
        send(paths)
    }

    /// Tells the watchers, then the listeners, of changes at `changes`, reading each changed
    /// value once however many listeners it reaches.
    private func send(_ changes: [Path]) {
        var cache: [Path: JSONValue] = [:]
        func value(_ path: Path) -> JSONValue {
            if let cached = cache[path] { return cached }
            let v = read(path, nil)
            cache[path] = v
            return v
        }
        if !changes.isEmpty {
            for watcher in Array(watchers.values) { watcher(changes) }
        }
        for (id, listener) in listeners where listener.query == nil {
            for changed in changes {
                // Closed (too slow) while these events went out.
                guard listeners[id] != nil else { break }
                // Presence shows only to those who listen to it (`Node.valueWithLiveOnQueue`).
                if LivePaths.isPresence(changed) && !LivePaths.isPresence(listener.path) { continue }
                if let relative = changed.relative(to: listener.path) {
                    if let only = listener.only {
                        guard let first = relative.segments.first else {
                            send("put", .object(["path": "/", "data": readChildren(listener.path, only)]), to: listener)
                            continue
                        }
                        guard only.contains(first) else { continue }
                    }
                    send("put", .object(["path": .string(relative.description), "data": value(changed)]), to: listener)
                } else if changed.isAncestor(of: listener.path) {
                    let whole = listener.only.map { readChildren(listener.path, $0) } ?? value(listener.path)
                    send("put", .object(["path": "/", "data": whole]), to: listener)
                }
            }
        }
        for (id, listener) in listeners where listener.query != nil {
            windowChanges(changes, for: id, listener, value: value)
        }
    }

    /// The events of a query's window (Firebase's REST streaming of a query, as this node
    /// sends it): the window is worked out again once per batch of records that touch the
    /// location, then
    /// - a change inside a child that stays in the window: a `put` at the changed path, as
    ///   for a plain listener;
    /// - children that enter or leave the window (a new message pushes the oldest out of
    ///   `limitToLast`): their new values, null for those that left; one such child is a `put`
    ///   at `/key`, several are one `patch` at `/`, so the window never shows a state between;
    /// - a change at or above the location, or a window that is not an object: a `put` of the
    ///   window whole at `/`.
    /// Changes to children outside the window before and after send nothing.
    private func windowChanges(_ changes: [Path], for id: ObjectIdentifier, _ listener: Listener, value: (Path) -> JSONValue) {
        guard let query = listener.query else { return }
        let touching = changes.filter { $0.isAncestorOrSelf(of: listener.path) || listener.path.isAncestor(of: $0) }
        guard !touching.isEmpty else { return }
        let window = read(listener.path, query)
        let keys = EventHub.keys(of: window)
        listeners[id]?.window = keys
        guard let old = listener.window, let keys, case let .object(members) = window,
              !touching.contains(where: { $0.isAncestorOrSelf(of: listener.path) }) else {
            send("put", .object(["path": "/", "data": window]), to: listener)
            return
        }
        var moved: [String: JSONValue] = [:]
        for key in old.subtracting(keys) { moved[key] = .null }
        for key in keys.subtracting(old) { moved[key] = members[key] ?? .null }
        for changed in touching {
            guard let relative = changed.relative(to: listener.path), let key = relative.segments.first,
                  old.contains(key), keys.contains(key) else { continue }
            send("put", .object(["path": .string(relative.description), "data": value(changed)]), to: listener)
        }
        if moved.count == 1, let (key, data) = moved.first {
            send("put", .object(["path": .string("/" + key), "data": data]), to: listener)
        } else if !moved.isEmpty {
            send("patch", .object(["path": "/", "data": .object(moved)]), to: listener)
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
