import HTTP
import Node
import Store
import Tree
import Wire

/// REST writes whose body was spooled (above the 16 MiB kept in memory, up to 256 MiB): the
/// body is read from its file as a stream and written as a large write (`Store.streamedWrite`),
/// never held whole. Answers, errors and conditions are those of the in-memory writes
/// (`RESTHandler`), but for what is echoed: a PUT's location is sent as a read of it (streamed
/// when large), a PATCH's body is sent back from its file as the client sent it.
extension RESTHandler {
    /// What to answer a spooled write with.
    enum StreamedReply {
        case response(HTTPResponse)
        /// The location's value, read now (a PUT not `print=silent`).
        case location(Path)
        /// The body as received (a PATCH not `print=silent`).
        case body
    }

    /// Which requests may have a spooled body: writes of the database with the API token or
    /// an admitted session; everything else keeps the in-memory limit, so no one can fill the
    /// disk before being refused.
    static func mayStream(_ request: HTTPRequest) -> Bool {
        ["PUT", "PATCH", "POST"].contains(request.method) && request.path.first != ".lanchat"
            && request.path.last?.hasSuffix(".json") == true
    }

    func streamedWrite(_ request: HTTPRequest, _ spool: SpooledBody) -> StreamedReply {
        let path: Path
        switch RESTHandler.treePath(request) {
        case let .path(p): path = p
        case let .refused(response): return .response(response)
        }
        let kind: StreamedWriteKind
        switch request.method {
        case "PUT": kind = .set
        case "PATCH": kind = .update
        case "POST": kind = .push
        default: return .response(APIResponse.error(405, "Method not allowed"))
        }
        do {
            if LivePaths.isLive(path) {
                if kind == .push { throw BadRequest(message: "A live path takes PUT, PATCH and DELETE, not push") }
                throw BadRequest(message: "A live value is at most \(LiveValue.maxValueBytes) bytes")
            }
            if kind != .push, let failed = try streamedPrecondition(path, request) { return .response(failed) }
            let reader = try spool.reader()
            var pushKey: String?
            let directory = node.withStoreOnQueue { store, _ in store.spoolDirectory }
            try TreeAccess(node: node).write { store, key, now in
                pushKey = try store.streamedWrite(kind, at: path, scratchDirectory: directory, source: { try reader.next() },
                                                  signer: key, nowMillis: now).pushKey
            }
            let silent = request.queryValue("print") == "silent"
            switch kind {
            case .push:
                if silent { return .response(APIResponse.noContent()) }
                return .response(APIResponse.json(.object(["name": .string(pushKey ?? "")])))
            case .set:
                return silent ? .response(APIResponse.noContent()) : .location(path)
            case .update:
                return silent ? .response(APIResponse.noContent()) : .body
            }
        } catch is JSONError {
            return .response(APIResponse.error(400, "Invalid data; couldn't parse JSON object, array, or value."))
        } catch StreamedWriteError.notAnObject {
            return .response(APIResponse.error(400, "Invalid data; the body of a PATCH must be an object."))
        } catch let StreamedWriteError.livePath(live) {
            return .response(APIResponse.error(400, "A live value is at most \(LiveValue.maxValueBytes) bytes: \(live)"))
        } catch let error as TreeError {
            return .response(APIResponse.error(400, "\(error)"))
        } catch StoreError.permissionDenied {
            return .response(APIResponse.error(403, "Permission denied"))
        } catch let error as RecordError {
            return .response(APIResponse.error(400, "\(error)"))
        } catch let error as BadRequest {
            return .response(APIResponse.error(400, error.message))
        } catch {
            return .response(APIResponse.failure(error))
        }
    }

    /// `if-match` as the in-memory writes check it.
    private func streamedPrecondition(_ path: Path, _ request: HTTPRequest) throws -> HTTPResponse? {
        guard let expected = request.header("if-match") else { return nil }
        let tagged = TaggedJSON(try TreeAccess(node: node).value(at: path))
        guard expected == tagged.etag else { return APIResponse.json(tagged, status: 412) }
        return nil
    }
}
