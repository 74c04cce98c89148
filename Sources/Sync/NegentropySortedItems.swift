/// A node's items in protocol order, deduplicated, held in one contiguous array.
///
/// A sorted array is the simplest storage that answers the two questions reconciliation asks:
/// "where does this bound fall?" (binary search, O(log n)) and "what is the fingerprint of these
/// positions?". Build it once per sync; it is immutable and cheap to copy.
///
/// Fingerprints come from running sums kept every `blockSize` items (`prefixSums`): the sum of a
/// range is the sum up to its end less the sum up to its start, each a kept sum plus at most
/// `blockSize - 1` items, so any range costs O(1) however large. Summing ranges item by item
/// made a cold sync quadratic: a reply that fills its frame with ids closes with the fingerprint
/// of everything after them, so a node serving a new member a million records summed the rest
/// of its set again for every 1,870 ids sent (about 270 million additions, a tenth of its work).
/// The sums cost one pass when built and 32 bytes per block (0.5 MB at a million items).
public struct NegentropySortedItems: Sendable, RandomAccessCollection {
    private let storage: ContiguousArray<NegentropyPackedItem>
    /// `prefixSums[k]` is the sum of the ids at positions `0 ..< k * blockSize`.
    private let prefixSums: ContiguousArray<NegentropyAccumulator>
    /// Items between kept sums: a range's fingerprint adds at most twice this many ids.
    static let blockSize = 64

    /// Sorts and deduplicates `items`; order of the input does not matter. O(n log n).
    public init<S: Sequence>(_ items: S) where S.Element == NegentropyItem {
        var packed = ContiguousArray(items.lazy.map(NegentropyPackedItem.init))
        packed.sort()
        var unique = ContiguousArray<NegentropyPackedItem>()
        unique.reserveCapacity(packed.count)
        for item in packed where unique.last != item { unique.append(item) }
        self.init(sortedUnique: unique)
    }

    /// Items already sorted and unique, shared rather than copied (`NegentropyGrowingSet`).
    init(sortedUnique: ContiguousArray<NegentropyPackedItem>) {
        storage = sortedUnique
        prefixSums = Self.prefixSums(of: sortedUnique)
    }

    /// The running sum at every `blockSize`-th position, from 0 up to the last full block.
    private static func prefixSums(of items: ContiguousArray<NegentropyPackedItem>) -> ContiguousArray<NegentropyAccumulator> {
        var sums = ContiguousArray<NegentropyAccumulator>()
        sums.reserveCapacity(items.count / blockSize + 1)
        var sum = NegentropyAccumulator()
        sums.append(sum)
        items.withUnsafeBufferPointer { items in
            var position = 0
            while position + blockSize <= items.count {
                for offset in position ..< position + blockSize { sum.add(items[offset].id) }
                sums.append(sum)
                position += blockSize
            }
        }
        return sums
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

    /// Fingerprint of the items at `range`, in O(1): a short range is summed item by item, a
    /// longer one as the sum up to its end less the sum up to its start.
    func fingerprint(_ range: Range<Int>) -> [UInt8] {
        var sum: NegentropyAccumulator
        if range.count <= 2 * Self.blockSize {
            sum = NegentropyAccumulator()
            storage.withUnsafeBufferPointer { items in
                for position in range { sum.add(items[position].id) }
            }
        } else {
            sum = sumBefore(range.upperBound)
            sum.subtract(sumBefore(range.lowerBound))
        }
        return sum.fingerprint(count: range.count)
    }

    /// The sum of the ids at positions `0 ..< position`: the kept sum of the block it falls in,
    /// plus the items of that block before it.
    private func sumBefore(_ position: Int) -> NegentropyAccumulator {
        let block = position / Self.blockSize
        var sum = prefixSums[block]
        storage.withUnsafeBufferPointer { items in
            for offset in block * Self.blockSize ..< position { sum.add(items[offset].id) }
        }
        return sum
    }
}
