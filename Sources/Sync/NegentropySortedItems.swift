/// A node's items in protocol order, deduplicated, held in one contiguous array.
///
/// A sorted array is the simplest storage that answers the two questions reconciliation asks:
/// "where does this bound fall?" (binary search, O(log n)) and "what is the fingerprint of these
/// positions?" (a linear sum, O(k) for k items). Each message's ranges are disjoint, so answering
/// a whole message costs O(n) additions at most, with small constants: an item is five words and
/// adding one is four limb additions. Build it once per sync; it is immutable and cheap to copy.
public struct NegentropySortedItems: Sendable, RandomAccessCollection {
    private let storage: ContiguousArray<NegentropyPackedItem>

    /// Sorts and deduplicates `items`; order of the input does not matter. O(n log n).
    public init<S: Sequence>(_ items: S) where S.Element == NegentropyItem {
        var packed = ContiguousArray(items.lazy.map(NegentropyPackedItem.init))
        packed.sort()
        var unique = ContiguousArray<NegentropyPackedItem>()
        unique.reserveCapacity(packed.count)
        for item in packed where unique.last != item { unique.append(item) }
        storage = unique
    }

    /// Items already sorted and unique, shared rather than copied (`NegentropyGrowingSet`).
    init(sortedUnique: ContiguousArray<NegentropyPackedItem>) {
        storage = sortedUnique
    }

    /// Always 0: positions are plain offsets, so ranges of positions map directly to protocol ranges.
    public var startIndex: Int { 0 }
    /// The number of distinct items.
    public var endIndex: Int { storage.count }

    /// The item at `position` in protocol order, unpacked into its public form.
    public subscript(position: Int) -> NegentropyItem { storage[position].item }

    /// The packed item at `position`, for the engine's inner loops.
    func packed(_ position: Int) -> NegentropyPackedItem { storage[position] }

    /// The first position in `range` whose item is at or above `bound`, by binary search.
    func lowerBound(of bound: NegentropyBound, in range: Range<Int>) -> Int {
        var low = range.lowerBound
        var high = range.upperBound
        while low < high {
            let mid = low + (high - low) / 2
            if bound.isAtOrBelow(storage[mid]) { high = mid } else { low = mid + 1 }
        }
        return low
    }

    /// Whether our fingerprint of `range` equals the 16 bytes at `offset` in `message`.
    func fingerprint(_ range: Range<Int>, matches message: [UInt8], at offset: Int) -> Bool {
        let ours = fingerprint(range)
        var index = 0
        while index < ours.count {
            if ours[index] != message[offset + index] { return false }
            index += 1
        }
        return true
    }

    /// Fingerprint of the items at `range`; linear in the range's size.
    func fingerprint(_ range: Range<Int>) -> [UInt8] {
        var sum = NegentropyAccumulator()
        storage.withUnsafeBufferPointer { items in
            for position in range { sum.add(items[position].id) }
        }
        return sum.fingerprint(count: range.count)
    }
}
