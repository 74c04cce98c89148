import Crypto
import SQLite
import Tree
import Wire

/// What happened to a batch of incoming records.
public struct IngestReport: Sendable {
    /// Records stored for the first time.
    public var added = 0
    /// Records already held (duplicates cost one index lookup).
    public var duplicates = 0
    /// Records not stored, by position in the batch, with the reason.
    public var refused: [(index: Int, reason: String)] = []
    /// Positions in the batch of the records stored for the first time.
    public var addedIndices: [Int] = []

    public init() {}
}

extension Store {
    /// Stores verified records in one transaction and applies each new one to the tree.
    /// Records stamped further ahead of `nowMillis` than the clock's drift bound are refused for
    /// now (reconciliation offers them again later), so no wrong clock can make a write win forever.
    public func ingest(_ records: [Record], nowMillis: UInt64) throws -> IngestReport {
        var report = IngestReport()
        try transaction {
            var newest = clock.last
            for (index, record) in records.enumerated() {
                guard clock.accepts(record.clock, nowMillis: nowMillis) else {
                    report.refused.append((index, "clock \(HybridLogicalClock.millis(of: record.clock)) ms is too far ahead of this node's \(nowMillis) ms; not accepted yet"))
                    continue
                }
                if try insert(record) {
                    try apply(record)
                    report.added += 1
                    report.addedIndices.append(index)
                    newest = max(newest, record.clock)
                } else {
                    report.duplicates += 1
                }
            }
            // The receive rule of the hybrid logical clock: later local writes sort after
            // everything seen.
            if newest > clock.last {
                clock.last = newest
                try saveClock()
            }
        }
        return report
    }

    /// Inserts the record unless held; returns whether it was new.
    func insert(_ record: Record) throws -> Bool {
        try db.run("INSERT OR IGNORE INTO records(id, clock, author, kind, bytes) VALUES (?, ?, ?, ?, ?)", [
            .blob(record.id.bytes), .integer(Int64(bitPattern: record.clock)), .blob(record.author.bytes),
            .integer(Int64(record.kind.rawValue)), .blob(record.encoded),
        ])
        return db.changes == 1
    }

    /// Applies every pair of a newly stored record under the write rules.
    func apply(_ record: Record) throws {
        switch record.body {
        case let .manifest(manifest):
            try blobs.addManifest(manifest, id: record.id)
        case let .file(entry):
            try blobs.applyFile(entry, author: record.author, order: record.order.key)
        case let .write(pairs):
            let order = record.order.key
            var profileChanged = false
            for pair in pairs {
                let zone = Zone.of(pair.path)
                switch zone {
                case .open:
                    try materializer.apply(path: pair.path, value: Zone.stripZones(pair.value, at: pair.path), order: order)
                case .user, .message:
                    try zones.apply(pair, zone: zone, author: record.author, order: order)
                    if case let .user(owner) = zone, owner == record.author.userID { profileChanged = true }
                }
            }
            // The users directory follows the author's profile, in the same transaction.
            if profileChanged { try refreshUserDirectory(uid: record.author.userID) }
        }
    }

    var materializer: Materializer { Materializer(db: db) }
    var blobs: BlobStore { BlobStore(db: db) }
}
