/// The exclusive upper end of a range: a timestamp and an id prefix padded with zero bytes.
///
/// Prefixes let a bound fall between two items with the same timestamp while costing nothing
/// when timestamps differ. The padded id is kept packed so comparing a bound with an item is five
/// integer comparisons; `prefixLength` only matters for encoding.
struct NegentropyBound: Comparable, Sendable {
    /// The bound below every item: timestamp 0, empty prefix. It is where the first range starts.
    static let zero = NegentropyBound(timestamp: 0, id: .zero, prefixLength: 0)
    /// The bound above every item; items may not use this timestamp.
    static let infinity = NegentropyBound(timestamp: .max, id: .zero, prefixLength: 0)

    var timestamp: UInt64
    /// The id prefix, zero-padded to 32 bytes.
    var id: NegentropyPackedID
    /// How many leading bytes of `id` are written on the wire (0...32).
    var prefixLength: Int

    var isInfinity: Bool { timestamp == .max }

    /// The shortest bound that is above `previous` and not above `current` (which must be greater),
    /// so the range it closes splits exactly between the two items.
    static func between(_ previous: NegentropyPackedItem, _ current: NegentropyPackedItem) -> NegentropyBound {
        if previous.timestamp != current.timestamp {
            return NegentropyBound(timestamp: current.timestamp, id: .zero, prefixLength: 0)
        }
        var shared = 0
        while shared < 31, previous.id.byte(shared) == current.id.byte(shared) { shared += 1 }
        let length = shared + 1
        let prefix = (0..<length).map { current.id.byte($0) }
        return NegentropyBound(timestamp: current.timestamp, id: NegentropyPackedID(bytes: prefix), prefixLength: length)
    }

    static func < (lhs: NegentropyBound, rhs: NegentropyBound) -> Bool {
        if lhs.timestamp != rhs.timestamp { return lhs.timestamp < rhs.timestamp }
        return lhs.id < rhs.id
    }

    static func == (lhs: NegentropyBound, rhs: NegentropyBound) -> Bool {
        lhs.timestamp == rhs.timestamp && lhs.id == rhs.id
    }

    /// True when `item` lies at or above this bound, i.e. outside a range that ends here.
    func isAtOrBelow(_ item: NegentropyPackedItem) -> Bool {
        if item.timestamp != timestamp { return item.timestamp > timestamp }
        return !(item.id < id)
    }
}
