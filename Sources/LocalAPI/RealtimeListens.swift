import Dispatch
import Realtime
import Tree

/// How a session's listens follow the tree, and how they end.
extension RealtimeSession {
    /// New records changed `changes`: each listen at or around them gets the new data. A listen
    /// of a location gets `d` of the one path that changed below it, `m` of all of them when
    /// several did (one merge, applied at once), or `d` of itself for a change at or above it;
    /// a query gets its window again, whole, when it differs from the one last sent.
    func changed(_ changes: [Path]) {
        dispatchPrecondition(condition: .onQueue(server.node.queue))
        guard !closing, !finished, authenticated, !listens.isEmpty else { return }
        var cache: [Path: JSONValue] = [:]
        func value(_ path: Path) -> JSONValue {
            if let cached = cache[path] { return cached }
            let v = (try? access.value(at: path)) ?? .null
            cache[path] = v
            return v
        }
        for (key, listen) in listens {
            guard !closing else { return }
            if listen.tag == nil {
                if changes.contains(where: { $0.isAncestorOrSelf(of: listen.path) }) {
                    send(RealtimeReply.data(listen.path, value(listen.path), tag: nil))
                    continue
                }
                let below = changes.filter { listen.path.isAncestor(of: $0) }
                if below.count == 1 {
                    send(RealtimeReply.data(below[0], value(below[0]), tag: nil))
                } else if below.count > 1 {
                    // One merge, so that what one record changed together reaches the app together.
                    var members: [String: JSONValue] = [:]
                    for change in below {
                        members[RealtimeReply.wirePath(change.relative(to: listen.path) ?? change)] = value(change)
                    }
                    send(RealtimeReply.data(listen.path, .object(members), tag: nil, merge: true))
                }
                continue
            }
            guard changes.contains(where: { $0.isAncestorOrSelf(of: listen.path) || listen.path.isAncestor(of: $0) }) else { continue }
            guard let window = try? read(listen.path, listen.query) else { continue }
            let etag = firebaseETag(of: window)
            guard etag != listen.lastWindow else { continue }
            listens[key]?.lastWindow = etag
            send(RealtimeReply.data(listen.path, window, tag: listen.tag))
        }
    }

    /// Ends every listen with `c` (listen revoked), as when the credentials that allowed them go.
    /// The SDK finds the listen by its path and, for a query, the list of its query objects
    /// (a listen of a whole location names none).
    func revokeListens() {
        for listen in listens.values {
            var body: [String: JSONValue] = ["p": .string(RealtimeReply.wirePath(listen.path))]
            if listen.tag != nil { body["q"] = .array([listen.queryObject]) }
            send(RealtimeReply.push("c", body))
        }
        listens.removeAll()
    }
}
