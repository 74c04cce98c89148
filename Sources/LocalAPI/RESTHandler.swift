import Foundation
import HTTP
import Node
import Store
import Tree
import Crypto
import Wire

/// The Firebase Realtime Database REST protocol over the node's tree (shared/FIREBASE-REST.md):
/// GET with shallow, queries and ETags; PUT, PATCH, POST, DELETE with conditional writes and
/// `print=silent`. Writes are records signed by the node's identity, so they sync.
struct RESTHandler {
    let node: Node

    /// A request's tree path, or the error response to send instead.
    enum Target {
        case path(Path)
        case refused(HTTPResponse)
    }

    /// The tree path of a `/<path>.json` request (`/.json` is the root).
    static func treePath(_ request: HTTPRequest) -> Target {
        var segments = request.path
        guard let last = segments.last, last.hasSuffix(".json") else {
            return .refused(APIResponse.error(404, "Not found: data paths end in .json"))
        }
        segments[segments.count - 1] = String(last.dropLast(5))
        segments.removeAll { $0.isEmpty }
        do {
            return .path(try Path(segments: segments))
        } catch {
            return .refused(APIResponse.error(400, "Invalid path: \(error)"))
        }
    }

    func handle(_ request: HTTPRequest) -> HTTPResponse {
        let path: Path
        switch RESTHandler.treePath(request) {
        case let .path(p): path = p
        case let .refused(response): return response
        }
        do {
            switch request.method {
            case "GET": return try get(path, request)
            case "PUT": return try put(path, request)
            case "PATCH": return try patch(path, request)
            case "POST": return try post(path, request)
            case "DELETE": return try delete(path, request)
            default: return APIResponse.error(405, "Method not allowed")
            }
        } catch let error as TreeError {
            return APIResponse.error(400, "\(error)")
        } catch let error as FirebaseQueryError {
            return APIResponse.error(400, "\(error)")
        } catch StoreError.permissionDenied {
            return APIResponse.error(403, "Permission denied")
        } catch let error as RecordError {
            return APIResponse.error(400, "\(error)")
        } catch let error as BadRequest {
            return APIResponse.error(400, error.message)
        } catch let error as Node.LiveWriteError {
            switch error {
            case .permissionDenied: return APIResponse.error(403, "Permission denied")
            case let .refused(why) where why.hasPrefix("more than"): return APIResponse.error(429, why)
            case let .refused(why): return APIResponse.error(400, why)
            }
        } catch {
            // A failure of the node itself (the store), not of the request.
            return APIResponse.failure(error)
        }
    }

    struct BadRequest: Error { let message: String }

    /// The value at `path` as clients see it (`TreeAccess.value(at:)`).
    private func current(_ path: Path) throws -> JSONValue {
        try TreeAccess(node: node).value(at: path)
    }

    private func body(_ request: HTTPRequest, default fallback: JSONValue? = nil) throws -> JSONValue {
        if request.body.isEmpty, let fallback { return fallback }
        do { return try JSONValue.parse(request.body) } catch {
            throw BadRequest(message: "Invalid data; couldn't parse JSON object, array, or value.")
        }
    }

    private func silent(_ request: HTTPRequest) -> Bool { request.queryValue("print") == "silent" }
    private func pretty(_ request: HTTPRequest) -> Bool { request.queryValue("print") == "pretty" }

    /// A read. A query or `shallow=true` is answered without reading the whole location where the
    /// store can (`Store.query`, `Store.shallowValue`); its ETag is that of the value returned,
    /// while a plain read's is that of the location's value, which is what it returns.
    private func get(_ path: Path, _ request: HTTPRequest) throws -> HTTPResponse {
        let query = try FirebaseQuery.parse(request.query.map { ($0.name, $0.value) })
        let value: JSONValue
        if request.queryValue("shallow") == "true" {
            guard query == nil else { throw BadRequest(message: "Mixing 'shallow' and querying parameters is not supported") }
            let stored = try node.withStoreOnQueue { store, _ in try store.shallowValue(at: path) }
            value = node.liveEntriesOnQueue(for: path).map { LivePaths.shallowOverlay(stored, at: path, entries: $0) } ?? stored
        } else if let query {
            value = try TreeAccess(node: node).query(query, at: path)
        } else {
            value = try current(path)
        }
        let tagged = TaggedJSON(value)
        if let match = request.header("if-none-match"), match == tagged.etag {
            return HTTPResponse(status: 304, headers: APIResponse.common + [("ETag", tagged.etag)])
        }
        if pretty(request) { return APIResponse.json(value, extra: [("ETag", tagged.etag)], pretty: true) }
        return APIResponse.json(tagged)
    }

    /// Checks `if-match`: the write happens only if the current value still has that ETag.
    private func precondition(_ path: Path, _ request: HTTPRequest) throws -> HTTPResponse? {
        guard let expected = request.header("if-match") else { return nil }
        let tagged = TaggedJSON(try current(path))
        guard expected == tagged.etag else { return APIResponse.json(tagged, status: 412) }
        return nil
    }

    /// The answer to a write: `shown` (what Firebase echoes), with the location's new ETag.
    /// After a PUT the location's value is what is shown, read anyway; after a PATCH or DELETE
    /// the ETag takes a read of the whole location (for a PATCH at `/`, the whole tree), so it
    /// is worked out only when the client asks for it (`X-Firebase-ETag: true`, or an `if-match`
    /// write, whose next step needs it).
    private func written(_ path: Path, _ request: HTTPRequest, _ shown: JSONValue, location: JSONValue? = nil) throws -> HTTPResponse {
        var extra: [(String, String)] = []
        if let location {
            extra.append(("ETag", firebaseETag(of: location)))
        } else if request.header("X-Firebase-ETag")?.lowercased() == "true" || request.header("if-match") != nil {
            extra.append(("ETag", firebaseETag(of: try current(path))))
        }
        if silent(request) { return APIResponse.noContent(extra: extra) }
        return APIResponse.json(shown, extra: extra, pretty: pretty(request))
    }

    private func put(_ path: Path, _ request: HTTPRequest) throws -> HTTPResponse {
        let value = try body(request)
        if let failed = try precondition(path, request) { return failed }
        try TreeAccess(node: node).set(path, to: value)
        let now = try current(path)
        return try written(path, request, now, location: now)
    }

    private func patch(_ path: Path, _ request: HTTPRequest) throws -> HTTPResponse {
        let value = try body(request)
        guard case .object = value else { throw BadRequest(message: "Invalid data; the body of a PATCH must be an object.") }
        if let failed = try precondition(path, request) { return failed }
        try TreeAccess(node: node).update(path, with: value)
        return try written(path, request, value)
    }

    private func post(_ path: Path, _ request: HTTPRequest) throws -> HTTPResponse {
        let value = try body(request, default: .string(""))
        if LivePaths.isLive(path) { throw BadRequest(message: "A live path takes PUT, PATCH and DELETE, not push") }
        var name = ""
        try write { store, key, now in name = try store.push(path, value: value, signer: key, nowMillis: now).key }
        if silent(request) { return APIResponse.noContent() }
        return APIResponse.json(.object(["name": .string(name)]))
    }

    private func delete(_ path: Path, _ request: HTTPRequest) throws -> HTTPResponse {
        if let failed = try precondition(path, request) { return failed }
        try TreeAccess(node: node).set(path, to: .null)
        return try written(path, request, .null)
    }

    private func write(_ body: (Store, Crypto.PrivateKey, UInt64) throws -> Void) throws {
        try TreeAccess(node: node).write(body)
    }
}
