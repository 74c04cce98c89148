import Sync

/// The node's record set as reconciliation sees it: every record's (clock, id) (the snapshot for a
/// reconciliation sorts them, so they are kept in arrival order here), and
/// the whole-set fingerprint kept up to date as records arrive (the sum of ids changes by one
/// addition per record), so beacons cost nothing to fill.
struct RecordSet {
    private(set) var items: [NegentropyItem] = []
    private var ids = Set<RecordID>()
    private var running = NegentropyRunningFingerprint()
    private var snapshot: NegentropySortedItems?

    var count: Int { items.count }

    func contains(_ id: [UInt8]) -> Bool { ids.contains(RecordID(id)) }
    func contains(_ id: RecordID) -> Bool { ids.contains(id) }

    init(_ keys: [(clock: UInt64, id: [UInt8])]) {
        for key in keys { insert(clock: key.clock, id: key.id) }
    }

    mutating func insert(clock: UInt64, id: [UInt8]) {
        guard let item = NegentropyItem(timestamp: clock, id: id), ids.insert(RecordID(id)).inserted else { return }
        running.add(id)
        items.append(item)
        snapshot = nil
    }

    /// Negentropy's fingerprint of the whole set.
    var fingerprint: [UInt8] { running.fingerprint }

    /// A snapshot for one reconciliation, rebuilt only when the set changed.
    mutating func sortedItems() -> NegentropySortedItems {
        if let snapshot { return snapshot }
        let fresh = NegentropySortedItems(items)
        snapshot = fresh
        return fresh
    }
}

/// A record id as a set member, hashed as one run of bytes: an array of bytes would be hashed
/// byte by byte, which shows when every record of a cold sync is inserted.
struct RecordID: Hashable {
    let bytes: [UInt8]

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    func hash(into hasher: inout Hasher) {
        bytes.withUnsafeBytes { hasher.combine(bytes: $0) }
    }
}
