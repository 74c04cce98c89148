import Crypto
import Node
import Store
import Tree

/// Reads and writes of the tree on the node's queue, shared by the REST handler and the
/// Realtime Database sessions so both protocols write the same signed records the same way.
struct TreeAccess {
    let node: Node

    /// The value at `path`.
    func value(at path: Path) throws -> JSONValue {
        try node.withStoreOnQueue { store, _ in try store.value(at: path) }
    }

    /// A query's answer at `path`, read without reading the whole location where the store can.
    func query(_ query: FirebaseQuery, at path: Path) throws -> JSONValue {
        try node.withStoreOnQueue { store, _ in try store.query(query, at: path) }
    }

    /// Replaces the value at `path` (null deletes it).
    func set(_ path: Path, to value: JSONValue) throws {
        if value.isNull {
            try write { store, key, now in _ = try store.delete(path, signer: key, nowMillis: now) }
        } else {
            try write { store, key, now in _ = try store.set(path, to: value, signer: key, nowMillis: now) }
        }
    }

    /// Writes each member of `members` (keys may be paths) below `path`, atomically.
    func update(_ path: Path, with members: JSONValue) throws {
        try write { store, key, now in _ = try store.update(path, with: members, signer: key, nowMillis: now) }
    }

    /// Runs a write on the store with the node's identity and the wall clock, then hands its
    /// records to peers and observers. Durable when this returns.
    func write(_ body: (Store, Crypto.PrivateKey, UInt64) throws -> Void) throws {
        let now = node.wallMillis()
        try node.withStoreOnQueue { store, key in try body(store, key, now) }
        node.localWritesDone()
    }
}
