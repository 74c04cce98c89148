import Crypto
import Node
import Store
import Tree

/// Reads and writes of the tree on the node's queue, shared by the REST handler and the
/// Realtime Database sessions so both protocols write the same signed records the same way.
struct TreeAccess {
    let node: Node

    /// The value at `path` as clients see it: the stored tree with the live layer over it
    /// (typing flags, statuses, receipts, presence: Protocol.md §5.7).
    func value(at path: Path) throws -> JSONValue {
        let stored = try node.withStoreOnQueue { store, _ in try store.value(at: path) }
        return LivePaths.touches(path) ? node.valueWithLiveOnQueue(stored, at: path) : stored
    }

    /// A query's answer at `path`, read without reading the whole location where the store can,
    /// with the live layer over its window (only the live values below it are merged).
    func query(_ query: FirebaseQuery, at path: Path) throws -> JSONValue {
        let window = try node.withStoreOnQueue { store, _ in try store.query(query, at: path) }
        return node.windowWithLiveOnQueue(window, of: query, at: path)
    }

    /// Replaces the value at `path` (null deletes it). At a live path (Protocol.md §5.7) it is a
    /// live value of the node's own user, never a record.
    func set(_ path: Path, to value: JSONValue) throws {
        if LivePaths.isLive(path) {
            try setLive(path, value)
        } else if value.isNull {
            try write { store, key, now in _ = try store.delete(path, signer: key, nowMillis: now) }
        } else {
            try write { store, key, now in _ = try store.set(path, to: value, signer: key, nowMillis: now) }
        }
    }

    /// Writes each member of `members` (keys may be paths) below `path`: the members at live
    /// paths as live values, the others atomically as one record.
    func update(_ path: Path, with members: JSONValue) throws {
        var stored = [String: JSONValue]()
        var live = [(Path, JSONValue)]()
        if case let .object(byKey) = members {
            for (key, member) in byKey {
                let target = try path.appending(try Path(key))
                if LivePaths.isLive(target) { live.append((target, member)) } else { stored[key] = member }
            }
        }
        for (target, member) in live { try setLive(target, member) }
        guard !stored.isEmpty || live.isEmpty else { return }
        let rest = live.isEmpty ? members : .object(stored)
        try write { store, key, now in _ = try store.update(path, with: rest, signer: key, nowMillis: now) }
    }

    /// A write at a live path: only the node's own user's; presence is derived, never written.
    private func setLive(_ path: Path, _ value: JSONValue) throws {
        guard !LivePaths.isPresence(path), LivePaths.classify(path) != nil else {
            throw Node.LiveWriteError.permissionDenied
        }
        try node.setLive(path, to: value)
    }

    /// Runs a write on the store with the node's identity and the wall clock, then hands its
    /// records to peers and observers. Durable when this returns.
    func write(_ body: (Store, Crypto.PrivateKey, UInt64) throws -> Void) throws {
        let now = node.wallMillis()
        try node.withStoreOnQueue { store, key in try body(store, key, now) }
        node.localWritesDone()
    }
}
