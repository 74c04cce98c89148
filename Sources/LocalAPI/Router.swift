import Foundation
import HTTP
import Node
import Store
import Tree

/// Sends each request to what serves it: node endpoints under `/.lanchat/` (a prefix no data
/// path can take, since keys may not contain "."; private groups at `/.lanchat/groups` and
/// `/.lanchat/dm` are `GroupEndpoints`), storage under `/v0/b/`, the tree at `/<path>.json`.
enum Router {
    static func handle(_ request: HTTPRequest, server: APIServer) -> HTTPResponse {
        if request.path.first == ".info" { return TimeEndpoints.info(request, node: server.node) }
        if request.path == [".lanchat", "time"] { return TimeEndpoints.time(request, node: server.node) }
        if request.path.first == ".lanchat" {
            if request.path.count > 1, request.path[1] == "conversations" { return ConversationEndpoints.handle(request, server: server) }
            if request.path.count > 1, request.path[1] == "groups" || request.path[1] == "dm" { return GroupEndpoints.handle(request, server: server) }
            return NodeEndpoints.handle(request, node: server.node)
        }
        if request.path.count >= 4, request.path[0] == "v0", request.path[1] == "b", !(request.path.last ?? "").hasSuffix(".json") {
            return StorageHandler(node: server.node).handle(request)
        }
        if let page = WebApp.handle(request, server: server) { return page }  // the web chat: /, /app.js, /app.css
        return RESTHandler(node: server.node).handle(request)
    }
}

/// `/.lanchat/status` and `/.lanchat/peers` (what `lanchat status` shows, as JSON), and
/// `/.lanchat/users?q=QUERY&limit=N`: the users directory, with who is live now.
enum NodeEndpoints {
    /// Most users one directory request returns: a page, so one request cannot make the node
    /// encode the whole directory.
    static let maxUsersLimit = 1000
    /// Users returned when the request names no `limit`.
    static let defaultUsersLimit = 20

    static func users(_ request: HTTPRequest, node: Node) -> HTTPResponse {
        let limit: Int
        if let text = request.queryValue("limit") {
            guard let n = Int(text), n > 0, n <= maxUsersLimit else {
                return APIResponse.error(400, "limit must be an integer from 1 to \(maxUsersLimit)")
            }
            limit = n
        } else {
            limit = defaultUsersLimit
        }
        do {
            var entries = try node.withStoreOnQueue { store, _ in
                if let query = request.queryValue("q") { return try store.searchUsers(query, limit: limit) }
                return try store.listUsers(limit: limit)
            }
            let presence = node.presenceOnQueue()
            for i in entries.indices {
                if let live = presence[entries[i].uid] {
                    entries[i].online = live.online
                    entries[i].lastSeen = live.lastSeen
                    entries[i].state = live.state
                }
            }
            let data = try JSONEncoder().encode(entries)
            return HTTPResponse(status: 200, headers: APIResponse.common + [("Content-Type", APIResponse.jsonType)], body: Array(data))
        } catch let error as DirectoryError {
            return APIResponse.error(400, "\(error)")
        } catch {
            return APIResponse.error(500, "\(error)")
        }
    }

    static func handle(_ request: HTTPRequest, node: Node) -> HTTPResponse {
        guard request.method == "GET" else { return APIResponse.error(405, "Method not allowed") }
        let status = node.statusOnQueue()
        let peers: JSONValue = .array(status.peers.map { peer in
            var fields: [String: JSONValue] = [
                "userId": .string(peer.userID), "name": .string(peer.name), "address": .string(peer.address),
                "connected": .bool(peer.connected), "discovered": .bool(peer.discovered),
            ]
            if let seen = peer.lastSeenSecondsAgo { fields["lastSeenSecondsAgo"] = .number(seen.rounded()) }
            return .object(fields)
        })
        switch request.path.dropFirst().first {
        case "users":
            return users(request, node: node)
        case "status":
            return APIResponse.json(.object([
                "userId": .string(status.userID), "name": .string(status.name), "listen": .string(status.listen),
                "network": .string(status.network), "records": .number(Double(status.records)),
                "fingerprint": .string(status.fingerprint), "peers": peers,
            ]))
        case "peers":
            return APIResponse.json(peers)
        default:
            return APIResponse.error(404, "Not found")
        }
    }
}

/// The conversation list of the web chat: `GET /.lanchat/conversations` answers every
/// conversation's summary keyed by its id (`Store.conversationSummaries`; with
/// `Accept: text/event-stream` it is a live stream, `ConversationStreams`), and
/// `PUT /.lanchat/conversations/<id>/read` with a message key as a JSON string moves the node's
/// user's read mark of that conversation forward (answering `{"readKey": ...}`, the mark now).
enum ConversationEndpoints {
    /// A read mark is a message key (at most 768 bytes, the path limit); anything longer is refused unread.
    static let maxBody = 1024

    static func handle(_ request: HTTPRequest, server: APIServer) -> HTTPResponse {
        let node = server.node
        let rest = Array(request.path.dropFirst(2))
        do {
            switch (request.method, rest.count) {
            case ("GET", 0):
                return APIResponse.json(try ConversationStreams.all(node))
            case ("PUT", 2) where rest[1] == "read", ("POST", 2) where rest[1] == "read":
                guard request.body.count <= maxBody else { return APIResponse.error(413, "A read mark is one message key") }
                guard case let .string(key) = try? JSONValue.parse(request.body) else {
                    return APIResponse.error(400, "The body must be a message key as a JSON string")
                }
                let moved: Bool
                let mark: String?
                do {
                    (moved, mark) = try node.withStoreOnQueue { store, _ in
                        let moved = try store.markRead(rest[0], upTo: key)
                        return (moved, try store.readMark(rest[0]))
                    }
                } catch let error as TreeError {
                    return APIResponse.error(400, "\(error)")
                }
                // The id as the tree keeps it (NFC), which is how streams name the conversation.
                if moved, let id = try? Path(segments: ["conversations", rest[0]]).key {
                    server.events.conversations.changed(id)
                }
                // Shared as the user's read receipt (Protocol.md §5.7), so the user's other
                // nodes and the conversation's members see it.
                if moved, let mark, let path = try? Path(segments: ["conversations", rest[0], "readReceipts", node.userID]) {
                    try? node.setLive(path, to: .string(mark))
                }
                return APIResponse.json(.object(["readKey": mark.map(JSONValue.string) ?? .null]))
            case (_, 0):
                return APIResponse.error(405, "Method not allowed")
            case (_, 2) where rest[1] == "read":
                return APIResponse.error(405, "Method not allowed")
            default:
                return APIResponse.error(404, "Not found")
            }
        } catch {
            return APIResponse.error(500, "\(error)")
        }
    }
}

/// The node's clock for API clients (README, "Time"): record timestamps come from the node's
/// hybrid logical clock, which runs ahead of the host's wall clock when a peer's does.
///
/// - `GET /.info/serverTimeOffset.json`: the node's time minus the client's, in milliseconds, as
///   Firebase clients read `.info/serverTimeOffset`; the client's time is `?t=MILLIS` (or the
///   host's clock when absent, for clients on the node's machine).
/// - `GET /.lanchat/time`: `{"now", "wall", "offset"}`: the node's time, the host's wall clock and
///   their difference, in Unix milliseconds.
enum TimeEndpoints {
    static func nodeMillis(_ node: Node) -> (now: Int64, wall: Int64) {
        let wall = Int64(node.wallMillis())
        let hlc = (try? node.withStoreOnQueue { store, _ in Int64(store.lastClock >> 16) }) ?? 0
        return (max(wall, hlc), wall)
    }

    static func info(_ request: HTTPRequest, node: Node) -> HTTPResponse {
        guard request.method == "GET" else { return APIResponse.error(405, "Method not allowed") }
        guard request.path == [".info", "serverTimeOffset.json"] else { return APIResponse.error(404, "Not found") }
        let (now, wall) = nodeMillis(node)
        var client = wall
        if let text = request.queryValue("t") {
            guard let t = Int64(text), t >= 0 else { return APIResponse.error(400, "t must be the client's time in Unix milliseconds") }
            client = t
        }
        return APIResponse.json(.number(Double(now - client)))
    }

    static func time(_ request: HTTPRequest, node: Node) -> HTTPResponse {
        guard request.method == "GET" else { return APIResponse.error(405, "Method not allowed") }
        let (now, wall) = nodeMillis(node)
        return APIResponse.json(.object(["now": .number(Double(now)), "wall": .number(Double(wall)),
                                         "offset": .number(Double(now - wall))]))
    }
}
