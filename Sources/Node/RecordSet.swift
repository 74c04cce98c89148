import Crypto
import Store
import Sync

/// The node's record set as reconciliation sees it: every record's (clock, id), packed and sorted
/// on demand (`NegentropyGrowingSet`), and the whole-set fingerprint kept up to date as records
/// arrive (the sum of ids changes by one addition per record), so beacons cost nothing to fill.
///
/// Memory is what bounds it (about 56 bytes a record: 40 for the item, 16 for the id prefix in
/// a hash set), so it keeps no full ids for lookups. `mayContain` answers from the first 8 bytes
/// of an id: "no" is certain, "yes" is confirmed against the store by the caller
/// (`Node.holds`), since two records may share a prefix (a member can make such a pair with
/// some 2^32 signatures).
struct RecordSet {
    private var items = NegentropyGrowingSet()
    private var prefixes = Set<UInt64>()
    private var running = NegentropyRunningFingerprint()

    var count: Int { items.count }

    /// An empty set.
    init() {}

    /// Loads the key of every record stored as arrival number `sequence` or earlier, without an
    /// array per id. The arrival number, not a count of rows (which SQLite gets by reading a
    /// whole index), sizes the tables: numbers are given in order, so it is at least the count.
    init(reader: RecordKeyReader, through sequence: Int64) throws {
        let expected = Int(min(max(sequence, 0), 1 << 24))
        items.reserveCapacity(expected)
        prefixes.reserveCapacity(expected)
        try reader.forEachRecordKey(through: sequence) { clock, id in
            guard items.append(timestamp: clock, id: id) else { return }
            prefixes.insert(RecordSet.prefix(id))
            running.add(id)
        }
    }

    /// Whether a record with this id may be held; false is certain.
    func mayContain(_ id: Digest32) -> Bool {
        id.bytes.withUnsafeBytes { prefixes.contains(RecordSet.prefix($0)) }
    }

    /// Adds a record newly stored (each record once: the caller knows it from the store's
    /// report of what it added, or from its arrival number).
    mutating func insert(clock: UInt64, id: [UInt8]) {
        id.withUnsafeBytes { raw in
            guard items.append(timestamp: clock, id: raw) else { return }
            prefixes.insert(RecordSet.prefix(raw))
            running.add(raw)
        }
    }

    /// Negentropy's fingerprint of the whole set.
    var fingerprint: [UInt8] { running.fingerprint }

    /// A snapshot for one reconciliation, rebuilt only when the set changed.
    mutating func sortedItems() -> NegentropySortedItems { items.sortedItems() }

    private static func prefix(_ id: UnsafeRawBufferPointer) -> UInt64 {
        id.loadUnaligned(as: UInt64.self)
    }
}
