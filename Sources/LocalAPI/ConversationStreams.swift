import Dispatch
import HTTP
import Node
import Store
import Transport
import Tree
import Wire

/// Event streams of `/.lanchat/conversations`: the conversation list as summaries (title, last
/// message, unread count for the node's user), in Firebase's event format so a client applies
/// them as it applies a stream of the tree. First a `put` at `/` of every summary, keyed by
/// conversation; then, when records touch a conversation or its read mark moves, a `put` at
/// `/<id>` of its new summary (null once it holds nothing). A write at or above `/conversations`
/// sends the whole list again.
///
/// A summary is a few index look-ups (`Store.conversationSummary`), so a batch of records costs
/// one look-up per conversation it touches, whatever the conversation's length. Unsent bytes
/// are bounded per listener as in `EventHub`.
final class ConversationStreams {
    let node: Node

    private struct Listener {
        let connection: TCPConnection
        let chunked: Bool
        let maxPending: Int
    }
    private var listeners: [ObjectIdentifier: Listener] = [:]

    init(node: Node) { self.node = node }

    /// The summaries of every conversation, keyed by id; call on the node's queue.
    static func all(_ node: Node) throws -> JSONValue {
        let summaries = try node.withStoreOnQueue { store, _ in try store.conversationSummaries(me: node.userID) }
        return .object(Dictionary(summaries.map { ($0.id, $0.json) }, uniquingKeysWith: { first, _ in first }))
    }

    func add(_ connection: TCPConnection, version: HTTPVersion) {
        dispatchPrecondition(condition: .onQueue(node.queue))
        let headers = [("Content-Type", "text/event-stream; charset=utf-8"), ("Cache-Control", "no-cache"), ("Access-Control-Allow-Origin", "*")]
        let chunked = version != .http1_0
        connection.write(chunked ? HTTPChunkedWriter.head(status: 200, headers: headers)
                                 : HTTPChunkedWriter.closeDelimitedHead(status: 200, headers: headers))
        let value = (try? ConversationStreams.all(node)) ?? .object([:])
        connection.write(EventHub.frame("put", .object(["path": "/", "data": value]), chunked: chunked))
        listeners[ObjectIdentifier(connection)] = Listener(connection: connection, chunked: chunked,
                                                           maxPending: EventHub.maxPendingBytes + connection.pendingWriteBytes)
    }

    func remove(_ connection: TCPConnection) {
        listeners.removeValue(forKey: ObjectIdentifier(connection))
    }

    var listenerCount: Int { listeners.count }

    func close() {
        for listener in listeners.values { listener.connection.close() }
        listeners.removeAll()
    }

    func keepAlive() {
        for id in Array(listeners.keys) { send("keep-alive", .null, to: id) }
    }

    /// The conversations records touched, or nil when one wrote at or above `/conversations`.
    static func touched(_ records: [Record]) -> [String]? {
        var ids: [String] = []
        var seen = Set<String>()
        for record in records {
            if case .largeWrite = record.body { return nil }  // its paths are in its content
            if let conversation = record.privateConversationID {
                if seen.insert(conversation).inserted { ids.append(conversation) }
                continue
            }
            guard case let .write(pairs) = record.body else { continue }
            for pair in pairs {
                let segments = pair.path.segments
                if segments.isEmpty || segments == ["conversations"] { return nil }
                guard segments[0] == "conversations" else { continue }
                if seen.insert(segments[1]).inserted { ids.append(segments[1]) }
            }
        }
        return ids
    }

    func recordsAdded(_ records: [Record]) {
        dispatchPrecondition(condition: .onQueue(node.queue))
        guard !listeners.isEmpty else { return }
        guard let ids = ConversationStreams.touched(records) else {
            let value = (try? ConversationStreams.all(node)) ?? .object([:])
            for id in Array(listeners.keys) { send("put", .object(["path": "/", "data": value]), to: id) }
            return
        }
        for conversation in ids { changed(conversation) }
    }

    /// Sends conversation `id`'s summary as it is now (after new records, or its read mark moved).
    func changed(_ conversation: String) {
        dispatchPrecondition(condition: .onQueue(node.queue))
        guard !listeners.isEmpty else { return }
        let summary = (try? node.withStoreOnQueue { store, _ in try store.conversationSummary(conversation, me: node.userID) }) ?? nil
        let event = JSONValue.object(["path": .string("/" + conversation), "data": summary?.json ?? .null])
        for id in Array(listeners.keys) { send("put", event, to: id) }
    }

    private func send(_ event: String, _ data: JSONValue, to id: ObjectIdentifier) {
        guard let listener = listeners[id] else { return }
        listener.connection.write(EventHub.frame(event, data, chunked: listener.chunked))
        if listener.connection.pendingWriteBytes > listener.maxPending {
            remove(listener.connection)
            listener.connection.close()
        }
    }
}
