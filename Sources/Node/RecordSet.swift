import Crypto
import Sync

/// The node's record set as reconciliation sees it: every record's (clock, id), kept sorted, and
/// the whole-set fingerprint kept up to date as records arrive (the sum of ids changes by one
/// addition per record), so beacons cost nothing to fill.
struct RecordSet {
    private(set) var items: [NegentropyItem] = []
    private var ids = Set<[UInt8]>()
    /// The sum of all ids as a 256-bit little-endian integer, in four 64-bit limbs.
    private var sum: [UInt64] = [0, 0, 0, 0]
    private var snapshot: NegentropySortedItems?

    var count: Int { items.count }

    func contains(_ id: [UInt8]) -> Bool { ids.contains(id) }

    init(_ keys: [(clock: UInt64, id: [UInt8])]) {
        for key in keys { insertUnsorted(key.clock, key.id) }
        items.sort()
    }

    mutating func insert(clock: UInt64, id: [UInt8]) {
        guard let item = NegentropyItem(timestamp: clock, id: id), ids.insert(id).inserted else { return }
        add(id)
        // Records mostly arrive newest last, so search from the end.
        var index = items.endIndex
        while index > items.startIndex && item < items[index - 1] { index -= 1 }
        if index == items.endIndex || items.count < 64 {
            items.insert(item, at: index)
        } else {
            let position = items.partitioningIndex { !($0 < item) }
            items.insert(item, at: position)
        }
        snapshot = nil
    }

    private mutating func insertUnsorted(_ clock: UInt64, _ id: [UInt8]) {
        guard let item = NegentropyItem(timestamp: clock, id: id), ids.insert(id).inserted else { return }
        add(id)
        items.append(item)
    }

    private mutating func add(_ id: [UInt8]) {
        var carry: UInt64 = 0
        for limb in 0..<4 {
            var word: UInt64 = 0
            for byte in 0..<8 { word |= UInt64(id[limb * 8 + byte]) << UInt64(8 * byte) }
            let (partial, overflow1) = sum[limb].addingReportingOverflow(word)
            let (total, overflow2) = partial.addingReportingOverflow(carry)
            sum[limb] = total
            carry = (overflow1 ? 1 : 0) + (overflow2 ? 1 : 0)
        }
    }

    /// Negentropy's fingerprint of the whole set: SHA-256(sum || varint(count)), first 16 bytes.
    var fingerprint: [UInt8] {
        var bytes = [UInt8]()
        for limb in sum { for byte in 0..<8 { bytes.append(UInt8(truncatingIfNeeded: limb >> UInt64(8 * byte))) } }
        return Array(SHA256.hash(bytes + RecordSet.varint(UInt64(count))).prefix(16))
    }

    /// Negentropy's varint: base 128, most significant group first, high bit = more follows.
    static func varint(_ n: UInt64) -> [UInt8] {
        var groups = [UInt8(n & 0x7F)]
        var rest = n >> 7
        while rest > 0 {
            groups.append(UInt8(rest & 0x7F) | 0x80)
            rest >>= 7
        }
        return groups.reversed()
    }

    /// A snapshot for one reconciliation, rebuilt only when the set changed.
    mutating func sortedItems() -> NegentropySortedItems {
        if let snapshot { return snapshot }
        let fresh = NegentropySortedItems(items)
        snapshot = fresh
        return fresh
    }
}

extension Array {
    /// The first index whose element satisfies `predicate`, for a predicate that is false then
    /// true along the array (binary search).
    func partitioningIndex(where predicate: (Element) -> Bool) -> Int {
        var low = startIndex, high = endIndex
        while low < high {
            let mid = (low + high) / 2
            if predicate(self[mid]) { high = mid } else { low = mid + 1 }
        }
        return low
    }
}
