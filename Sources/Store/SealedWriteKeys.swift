import Crypto
import Private
import Tree
import Wire

/// The epoch keys this node holds, as an immutable value any thread may read: opening a sealed
/// write (XChaCha20-Poly1305, unpadding, decoding the pairs) is pure work, so the node does it
/// where signatures are checked, on every core, instead of on its one serial queue. The queue
/// then only judges membership and folds (`Store.applySealed`).
///
/// A snapshot may be out of date by the time the records it opened are stored (a key or leave
/// record stored meanwhile): that is why an opened write carries the key it was opened with, and
/// the store uses it only when the membership then in force gives that very key for the epoch.
/// Otherwise, or when the snapshot had no key, the write is opened on the queue as before.
public struct SealedWriteKeys: Sendable {
    /// By key record id: the epoch's key and the conversation the key record names.
    let keys: [Digest32: (conversation: String, key: EpochKey)]

    public static let none = SealedWriteKeys(keys: [:])

    public var isEmpty: Bool { keys.isEmpty }

    /// The write opened under the key this snapshot holds for its epoch; nil when the record
    /// is no sealed write, or the snapshot holds no key for its epoch in its conversation.
    public func open(_ record: Record) -> OpenedSealedWrite? {
        guard case let .sealedWrite(body) = record.body, let held = keys[body.epoch], held.conversation == body.conversation else { return nil }
        return OpenedSealedWrite(key: held.key, pairs: try? KeySchedule.openWriteAndValueBytes(body, key: held.key, author: record.author))
    }
}

/// A sealed write opened ahead of storing (`SealedWriteKeys.open`): the key tried, and the pairs
/// with each value's canonical encoding, or nil when it did not open under that key (a forged
/// or damaged ciphertext: the store then applies nothing, as it would opening it itself).
public struct OpenedSealedWrite: Sendable {
    let key: EpochKey
    let pairs: (pairs: [WritePair], valueBytes: [ArraySlice<UInt8>])?
}

extension Store {
    /// The keys of every epoch this node opens, in the conversations it holds a key of, for
    /// opening sealed writes off the queue. Worked out again only when a membership may have
    /// changed (`membershipGeneration`), so during a sync it costs a comparison per batch.
    public func sealedWriteKeys() -> SealedWriteKeys {
        if let cached = sealedKeysCache, cached.generation == membershipGeneration { return cached.keys }
        var keys = [Digest32: (conversation: String, key: EpochKey)]()
        if privateDevice != nil, let held = try? controlRecords() {
            for conversation in held.keys {
                guard let membership = try? membership(of: conversation) else { continue }
                for (id, epoch) in membership.opened { keys[id] = (conversation, epoch.key) }
            }
        }
        let snapshot = SealedWriteKeys(keys: keys)
        // After the work: resolving a membership fills the cache, which counts as a change.
        sealedKeysCache = (membershipGeneration, snapshot)
        return snapshot
    }
}
