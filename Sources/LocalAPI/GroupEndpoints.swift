import Crypto
import HTTP
import Node
import Store
import Tree

/// Private conversations through the node (Protocol.md §11), for the web chat and scripts:
///
/// - `POST /.lanchat/groups` `{"title", "members": [USER_ID...], "history": false}` creates a
///   group with the node's user as creator and answers `{"id": CID}`.
/// - `GET /.lanchat/groups/CID` answers `{"id", "title", "direct", "creator", "members": [{"uid",
///   "name"}]}`, as this node knows the conversation (404 when it holds none of its keys).
/// - `POST /.lanchat/groups/CID/members` `{"add": [USER_ID...]}` and/or `{"remove": [...]}`: a new
///   epoch (the creator only: 403 for anyone else).
/// - `POST /.lanchat/groups/CID/leave`: the node's user leaves (the creator cannot: 403).
/// - `POST /.lanchat/dm/USER_ID`: the direct conversation with that user, keyed now unless it is
///   already; answers `{"id": CID}`.
///
/// Each change is one signed record, written as `TreeAccess` writes: on the node's queue, then
/// pushed to peers at once. A malformed body is 400 and changes nothing.
enum GroupEndpoints {
    /// The largest body: a title (at most 256 bytes) and up to 1,000 member ids (43 bytes each,
    /// the most sealed keys one key record holds), with room for JSON punctuation.
    static let maxBody = 64 * 1024

    static func handle(_ request: HTTPRequest, server: APIServer) -> HTTPResponse {
        let rest = Array(request.path.dropFirst(2))
        guard request.body.count <= maxBody else { return APIResponse.error(413, "The body is larger than \(maxBody) bytes") }
        do {
            switch (request.path[1], request.method, rest.count) {
            case ("groups", "POST", 0):
                return try create(request, server: server)
            case ("groups", "GET", 1):
                return try describe(rest[0], node: server.node)
            case ("groups", "POST", 2) where rest[1] == "members":
                return try changeMembers(rest[0], request, server: server)
            case ("groups", "POST", 2) where rest[1] == "leave":
                return try leave(rest[0], server: server)
            case ("dm", "POST", 1):
                return try direct(with: rest[0], server: server)
            case ("groups", _, 0), ("groups", _, 1), ("dm", _, 1):
                return APIResponse.error(405, "Method not allowed")
            case ("groups", _, 2) where rest[1] == "members" || rest[1] == "leave":
                return APIResponse.error(405, "Method not allowed")
            default:
                return APIResponse.error(404, "Not found")
            }
        } catch let failure as Refusal {
            return APIResponse.error(failure.status, failure.message)
        } catch let error as StoreError {
            if case .permissionDenied = error { return APIResponse.error(403, "\(error)") }
            return APIResponse.failure(error)
        } catch {
            return APIResponse.failure(error)
        }
    }

    /// A request refused before anything is written.
    struct Refusal: Error {
        let status: Int
        let message: String
    }

    static func body(_ request: HTTPRequest) throws -> [String: JSONValue] {
        guard let value = try? JSONValue.parse(request.body), let object = value.objectValue else {
            throw Refusal(status: 400, message: "The body must be a JSON object")
        }
        return object
    }

    static func user(_ text: String) throws -> PublicKey {
        do { return try PublicKey(userID: text) } catch { throw Refusal(status: 400, message: "'\(text)' is not a user id") }
    }

    /// The user ids of `field`: an array of ids, or one id as a string; none when absent.
    static func users(_ object: [String: JSONValue], _ field: String) throws -> [PublicKey] {
        switch object[field] {
        case nil, .null?: return []
        case let .string(text)?: return [try user(text)]
        case let .array(items)?:
            return try items.map { item in
                guard case let .string(text) = item else { throw Refusal(status: 400, message: "\(field) must list user ids as strings") }
                return try user(text)
            }
        default: throw Refusal(status: 400, message: "\(field) must be a user id or a list of them")
        }
    }

    /// The node's user, whose key signs every change.
    static func me(_ node: Node) -> PublicKey { node.withStoreOnQueue { _, key in key.publicKey } }

    static func write<T>(_ server: APIServer, _ body: (Store, Crypto.PrivateKey, UInt64) throws -> T) throws -> T {
        let node = server.node
        let now = node.wallMillis()
        let result = try node.withStoreOnQueue { store, key in try body(store, key, now) }
        node.localWritesDone()
        return result
    }

    static func create(_ request: HTTPRequest, server: APIServer) throws -> HTTPResponse {
        let object = try body(request)
        guard case let .string(title)? = object["title"] else { throw Refusal(status: 400, message: "title must be a string") }
        let members = try users(object, "members")
        var history = false
        switch object["history"] {
        case nil, .null?: break
        case let .bool(flag)?: history = flag
        default: throw Refusal(status: 400, message: "history must be true or false")
        }
        let id = try write(server) { store, key, now in
            try store.createGroup(title: title, members: members, sharesHistory: history, signer: key, nowMillis: now)
        }
        return APIResponse.json(.object(["id": .string(id)]))
    }

    /// This node's view of the conversation, or a 404 refusal.
    static func info(_ conversation: String, node: Node) throws -> Store.PrivateInfo {
        guard let info = try node.withStoreOnQueue({ store, _ in try store.privateInfo(conversation) }) else {
            throw Refusal(status: 404, message: "No private conversation \(conversation) on this node")
        }
        return info
    }

    static func describe(_ conversation: String, node: Node) throws -> HTTPResponse {
        let info = try info(conversation, node: node)
        let members: [JSONValue] = try info.members.map { member in
            let name = try node.withStoreOnQueue { store, _ in try store.displayName(ofUser: member.userID) }
            return .object(["uid": .string(member.userID), "name": name.map(JSONValue.string) ?? .null])
        }
        return APIResponse.json(.object([
            "id": .string(info.conversation), "title": .string(info.title), "direct": .bool(info.creator == nil),
            "creator": info.creator.map { .string($0.userID) } ?? .null, "members": .array(members),
        ]))
    }

    static func changeMembers(_ conversation: String, _ request: HTTPRequest, server: APIServer) throws -> HTTPResponse {
        let object = try body(request)
        let adding = try users(object, "add")
        let removing = try users(object, "remove")
        guard !adding.isEmpty || !removing.isEmpty else { throw Refusal(status: 400, message: "Name members to add or remove") }
        let info = try info(conversation, node: server.node)
        guard info.creator == me(server.node) else {
            throw Refusal(status: 403, message: "Only the group's creator can change its members")
        }
        try write(server) { store, key, now in
            try store.changeMembers(conversation, adding: adding, removing: removing, signer: key, nowMillis: now)
        }
        return try describe(conversation, node: server.node)
    }

    static func leave(_ conversation: String, server: APIServer) throws -> HTTPResponse {
        let info = try info(conversation, node: server.node)
        guard info.creator != nil else { throw Refusal(status: 403, message: "A direct conversation cannot be left") }
        guard info.creator != me(server.node) else { throw Refusal(status: 403, message: "The group's creator cannot leave it") }
        try write(server) { store, key, now in try store.leaveGroup(conversation, signer: key, nowMillis: now) }
        return APIResponse.json(.object(["left": .string(conversation)]))
    }

    static func direct(with text: String, server: APIServer) throws -> HTTPResponse {
        let other = try user(text)
        guard other != me(server.node) else { throw Refusal(status: 400, message: "A direct conversation needs another user") }
        let id = try write(server) { store, key, now in try store.openDirect(with: other, signer: key, nowMillis: now) }
        return APIResponse.json(.object(["id": .string(id)]))
    }
}
