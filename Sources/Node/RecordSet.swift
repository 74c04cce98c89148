import Crypto
import Sync

/// The node's record set as reconciliation sees it: every record's (clock, id) (the snapshot for a
/// reconciliation sorts them, so they are kept in arrival order here), and
/// the whole-set fingerprint kept up to date as records arrive (the sum of ids changes by one
/// addition per record), so beacons cost nothing to fill.
struct RecordSet {
    private(set) var items: [NegentropyItem] = []
    private var ids = Set<Digest32>()
    private var running = NegentropyRunningFingerprint()
    private var snapshot: NegentropySortedItems?

    var count: Int { items.count }

    func contains(_ id: Digest32) -> Bool { ids.contains(id) }
    func contains(_ id: [UInt8]) -> Bool { (try? Digest32(bytes: id)).map(contains) ?? false }

    init(_ keys: [(clock: UInt64, id: [UInt8])]) {
        for key in keys { insert(clock: key.clock, id: key.id) }
    }

    mutating func insert(clock: UInt64, id: [UInt8]) {
        guard let item = NegentropyItem(timestamp: clock, id: id), let digest = try? Digest32(bytes: id),
              ids.insert(digest).inserted else { return }
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
