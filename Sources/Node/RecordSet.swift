import Crypto
import Store
import Sync

/// The node's record set as reconciliation sees it: every record's (clock, id), packed and sorted
/// on demand (`NegentropyGrowingSet`), and the whole-set fingerprint kept up to date as records
/// arrive (the sum of ids changes by one addition per record), so beacons cost nothing to fill.
///
/// Memory is what bounds it (about 72 bytes a record: 40 for the item, 32 for the id prefix and
/// clock in a hash table), so it keeps no full ids for lookups. `clocks(of:)` answers from the
/// first 8 bytes of an id with the clocks of the records sharing them: none is certain, any is
/// confirmed against the store by the caller (`Node.holds`), since two records may share a
/// prefix (a member can make such a pair with some 2^32 signatures). The clock is what the
/// store's index leads with (migration 17), so a lookup by id is one probe there.
struct RecordSet {
    private var items = NegentropyGrowingSet()
    /// The clock of the first record added with each id prefix.
    private var clocksByPrefix = [UInt64: UInt64]()
    /// The clocks of further records sharing a prefix with an earlier one (rare: made on purpose).
    private var moreClocks = [UInt64: [UInt64]]()
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
        clocksByPrefix.reserveCapacity(expected)
        try reader.forEachRecordKey(through: sequence) { clock, id in
            guard items.append(timestamp: clock, id: id) else { return }
            note(clock: clock, prefix: RecordSet.prefix(id))
            running.add(id)
        }
    }

    /// The clocks of the records held whose id starts as this one's: empty when the record is
    /// certainly not held; otherwise the store confirms (clock, id).
    func clocks(of id: Digest32) -> [UInt64] {
        var clocks = [UInt64]()
        forEachClock(of: id) { clocks.append($0) }
        return clocks
    }

    /// `clocks(of:)` one at a time, without an array for them: a peer's want is answered by
    /// looking up every id it names, a million for a cold sync.
    func forEachClock(of id: Digest32, _ body: (UInt64) throws -> Void) rethrows {
        let prefix = id.withUnsafeBytes { RecordSet.prefix($0) }
        guard let first = clocksByPrefix[prefix] else { return }
        try body(first)
        for clock in moreClocks[prefix] ?? [] { try body(clock) }
    }

    private mutating func note(clock: UInt64, prefix: UInt64) {
        if let first = clocksByPrefix[prefix] {
            if first != clock, moreClocks[prefix]?.contains(clock) != true { moreClocks[prefix, default: []].append(clock) }
        } else {
            clocksByPrefix[prefix] = clock
        }
    }

    /// Adds a record newly stored (each record once: the caller knows it from the store's
    /// report of what it added, or from its arrival number).
    mutating func insert(clock: UInt64, id: Digest32) {
        id.withUnsafeBytes { raw in
            guard items.append(timestamp: clock, id: raw) else { return }
            note(clock: clock, prefix: RecordSet.prefix(raw))
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
