import Foundation
import HTTP
import Node
import Private
import Store
import Tree
import Wire

/// The part of Firebase Storage's v0 REST API that chat apps use, over the node's blob store:
/// upload (`POST /v0/b/BUCKET/o?name=PATH`), download (`GET .../o/ENCODED_PATH?alt=media`),
/// metadata (`GET .../o/ENCODED_PATH`) and delete. Uploads are signed by the node's identity.
struct StorageHandler {
    let node: Node

    func handle(_ request: HTTPRequest) -> HTTPResponse {
        // ["v0", "b", BUCKET, "o"] or ["v0", "b", BUCKET, "o", PATH] (the path arrives %2F-encoded,
        // so it is one segment here).
        let segments = request.path
        guard segments.count >= 4, segments[0] == "v0", segments[1] == "b", segments[3] == "o" else {
            return APIResponse.error(404, "Not found")
        }
        let bucket = segments[2]
        do {
            if segments.count == 4 {
                guard request.method == "POST" else { return APIResponse.error(405, "Method not allowed") }
                guard let name = request.queryValue("name"), !name.isEmpty else {
                    return APIResponse.error(400, "Missing the name of the object (?name=PATH)")
                }
                return try upload(bucket, name, request)
            }
            let path = segments[4...].joined(separator: "/")
            switch request.method {
            case "GET": return try download(bucket, path, media: request.queryValue("alt") == "media")
            case "DELETE":
                guard try info(path) != nil else { return APIResponse.error(404, "Not found: \(path)") }
                try node.withStoreOnQueue { store, key in try store.deleteFile(path, signer: key, nowMillis: now()) }
                node.localWritesDone()
                return APIResponse.noContent()
            default: return APIResponse.error(405, "Method not allowed")
            }
        } catch let error as FileError {
            switch error {
            case .tooLarge: return APIResponse.error(413, "\(error)")
            case .noKey: return APIResponse.error(403, "\(error)")
            case .undecryptable: return APIResponse.error(422, "\(error)")
            default: return APIResponse.error(400, "\(error)")
            }
        } catch let error as RecordError {
            return APIResponse.error(400, "\(error)")
        } catch StoreError.permissionDenied {
            return APIResponse.error(403, "Permission denied")
        } catch {
            return APIResponse.failure(error)
        }
    }

    /// The node's wall clock (the system's, unless the node runs in a simulated world).
    private func now() -> UInt64 { node.wallMillis() }

    private func info(_ path: String) throws -> FileInfo? {
        try node.withStoreOnQueue { store, _ in try store.fileInfo(path) }
    }

    private func upload(_ bucket: String, _ path: String, _ request: HTTPRequest) throws -> HTTPResponse {
        let declared = request.header("content-type").flatMap { $0.split(separator: ";").first.map { String($0).trimmingCharacters(in: .whitespaces) } }
        let generic = declared == nil || declared == "application/octet-stream" || declared?.hasPrefix("application/x-www-form") == true
        let (stored, plain) = try node.withStoreOnQueue { store, key -> (FileInfo, (type: String, size: UInt64)?) in
            // The image of a photo message in a private conversation is sealed, and its key goes
            // beside the message's photoURL in a sealed write (Protocol.md §11.7).
            if let (conversation, message) = try privateMessage(path, store: store, me: key.publicKey.userID) {
                let sealed = try store.putSealedFile(path, bytes: request.body, declaredType: generic ? nil : declared, signer: key, nowMillis: now())
                let at = try Path(segments: ["conversations", conversation, "messages", message, "photoKey"])
                try store.set(at, to: .string(SealedFile.encodeKey(sealed.key)), signer: key, nowMillis: now())
                // The uploader answers with the image's own metadata, as for a plain upload.
                return (sealed.file, (ImageType.sniff(request.body) ?? "application/octet-stream", UInt64(request.body.count)))
            }
            return (try store.putFile(path, bytes: request.body, declaredType: generic ? nil : declared, signer: key, nowMillis: now()), nil)
        }
        node.localWritesDone()
        return APIResponse.json(metadata(bucket, stored, plain: plain))
    }

    /// The private conversation and message key a photo upload belongs to: a path
    /// `images/<my id>_<key>.<ext>` (as chat apps name a photo) whose key is a message of mine
    /// in a private conversation this node reads.
    private func privateMessage(_ path: String, store: Store, me: String) throws -> (String, String)? {
        let prefix = "images/\(me)_"
        guard path.hasPrefix(prefix) else { return nil }
        let name = path.dropFirst(prefix.count)
        let key = String(name.prefix { $0 != "." })
        guard !key.isEmpty, let conversation = try store.privateConversation(ofMessage: key, sender: me) else { return nil }
        return (conversation, key)
    }

    private func download(_ bucket: String, _ path: String, media: Bool) throws -> HTTPResponse {
        guard let file = try info(path) else { return APIResponse.error(404, "Not found: \(path)") }
        guard media else { return APIResponse.json(metadata(bucket, file)) }
        guard file.isComplete else {
            // Not a bad request: the bytes are on their way from peers.
            node.fetchFileOnQueue(path)
            return HTTPResponse(status: 503, headers: APIResponse.common + [("Retry-After", "1"), ("Content-Type", APIResponse.jsonType)],
                                body: Array("{\"error\":\"\(file.missing.count) of \(file.manifest.chunks.count) chunks are still being fetched\"}".utf8))
        }
        // A sealed photo is served opened, with the key its message carries here, or not at all.
        let opened = try node.withStoreOnQueue { store, _ in try store.openFile(path) }
        return HTTPResponse(status: 200, headers: APIResponse.common + [("Content-Type", opened.type)], body: opened.bytes)
    }

    /// Firebase Storage's object metadata. A sealed photo's (Protocol.md §11.7) are those of
    /// the image to a node that opens it (a member's, holding the key its message carries), as
    /// the app uploaded it; to any other, those of the sealed blob, which every node knows.
    private func metadata(_ bucket: String, _ file: FileInfo, plain: (type: String, size: UInt64)? = nil) -> JSONValue {
        let token = file.manifestID.description
        var type = file.manifest.contentType, size = file.manifest.size
        if let plain {
            (type, size) = plain
        } else if type == SealedFile.contentType, file.isComplete,
           let opened = try? node.withStoreOnQueue({ store, _ in try store.openFile(file.path) }) {
            type = opened.type
            size = UInt64(opened.bytes.count)
        }
        return .object([
            "name": .string(file.path), "bucket": .string(bucket), "contentType": .string(type),
            "size": .string(String(size)), "downloadTokens": .string(token),
            "blake2b": .string(file.manifest.blob.description),
            "mediaLink": .string("/v0/b/\(bucket)/o/\(file.path.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? file.path)?alt=media"),
        ])
    }
}
