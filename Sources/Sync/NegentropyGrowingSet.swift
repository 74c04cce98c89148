/// A node's whole record set as reconciliation reads it, kept in as little memory as it can be:
/// each item packed in 40 bytes (`NegentropyPackedItem`), with no per-item allocation and no
/// second copy by id. At a million records that is 40 MB, against some 200 MB for the same
/// items as `NegentropyItem`s (each id its own array) plus a hash set of their ids.
///
/// Items arrive one at a time, mostly newer than everything held but not always (a cold sync
/// delivers history in any order), and reconciliation wants them sorted. They are appended to a
/// short unsorted tail and merged into the sorted part only when a snapshot is asked for (once
/// per reconciliation round), in one linear pass; the merged array becomes the snapshot itself,
/// shared with the sessions that read it rather than copied.
public struct NegentropyGrowingSet: Sendable {
    private var merged = ContiguousArray<NegentropyPackedItem>()
    private var pending = ContiguousArray<NegentropyPackedItem>()
    private var snapshot: NegentropySortedItems?

    public init() {}

    /// Number of items added (the caller adds each item once).
    public var count: Int { merged.count + pending.count }

    /// Room for `count` items in all, so a set loaded whole grows its storage once.
    public mutating func reserveCapacity(_ count: Int) {
        pending.reserveCapacity(count - merged.count)
    }

    /// Adds an item from a clock and the 32 bytes of an id at `id`; returns false (and adds
    /// nothing) when they cannot be an item (`NegentropyItem.init?`). The caller adds each item
    /// once: the set does not look for duplicates, which would cost a lookup structure as large
    /// as the set itself.
    @discardableResult
    public mutating func append(timestamp: UInt64, id: UnsafeRawBufferPointer) -> Bool {
        guard id.count == NegentropyItem.idLength, timestamp != .max else { return false }
        func word(_ index: Int) -> UInt64 { UInt64(bigEndian: id.loadUnaligned(fromByteOffset: 8 * index, as: UInt64.self)) }
        pending.append(NegentropyPackedItem(timestamp: timestamp, id: NegentropyPackedID(w0: word(0), w1: word(1), w2: word(2), w3: word(3))))
        snapshot = nil
        return true
    }

    /// `append(timestamp:id:)` for an id as an array.
    @discardableResult
    public mutating func append(timestamp: UInt64, id: [UInt8]) -> Bool {
        id.withUnsafeBytes { append(timestamp: timestamp, id: $0) }
    }

    /// The items sorted, for one reconciliation: the tail merged into the sorted part first (a
    /// new array, since sessions may still read the previous one; the previous one is freed
    /// when the last of them is done). Duplicates, which a correct caller never adds, are
    /// dropped here so the snapshot is still a set.
    public mutating func sortedItems() -> NegentropySortedItems {
        if let snapshot { return snapshot }
        if !pending.isEmpty {
            pending.sort()
            let old = merged
            let tail = pending
            merged = ContiguousArray(unsafeUninitializedCapacity: old.count + tail.count) { buffer, initialized in
                var a = 0, b = 0, out = 0
                func put(_ item: NegentropyPackedItem) {
                    if out > 0, buffer[out - 1] == item { return }
                    buffer.initializeElement(at: out, to: item)
                    out += 1
                }
                while a < old.count, b < tail.count {
                    if tail[b] < old[a] { put(tail[b]); b += 1 } else { put(old[a]); a += 1 }
                }
                while a < old.count { put(old[a]); a += 1 }
                while b < tail.count { put(tail[b]); b += 1 }
                initialized = out
            }
            // Freed, not kept for reuse: its capacity may be far above the next tail's.
            pending = ContiguousArray()
        }
        let fresh = NegentropySortedItems(sortedUnique: merged)
        snapshot = fresh
        return fresh
    }
}
