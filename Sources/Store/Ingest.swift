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
    /// Their arrival numbers (`seq`), in the same order.
    public var addedSequences: [Int64] = []

    public init() {}
}

extension Store {
    /// Stores verified records in one transaction and applies each new one to the tree.
    /// Records stamped further ahead of `nowMillis` than the clock's drift bound are refused for
    /// now (reconciliation offers them again later), so no wrong clock can make a write win forever.
    /// `opened`, when given, holds one entry per record: a sealed write opened already off the
    /// queue (`SealedWriteKeys.open`), used when the membership then gives the same key.
    public func ingest(_ records: [Record], opened: [OpenedSealedWrite?]? = nil, nowMillis: UInt64) throws -> IngestReport {
        precondition(opened == nil || opened!.count == records.count, "one opened entry per record")
        var report = IngestReport()
        try transaction {
            var newest = clock.last
            for (index, record) in records.enumerated() {
                guard clock.accepts(record.clock, nowMillis: nowMillis) else {
                    report.refused.append((index, "clock \(HybridLogicalClock.millis(of: record.clock)) ms is too far ahead of this node's \(nowMillis) ms; not accepted yet"))
                    continue
                }
                if let seq = try insert(record) {
                    try apply(record, seq: seq, opened: opened?[index])
                    report.added += 1
                    report.addedIndices.append(index)
                    report.addedSequences.append(seq)
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

    /// Inserts the record unless held; returns its arrival number if it was new, nil if held.
    func insert(_ record: Record) throws -> Int64? {
        let statement = try db.cachedStatement("INSERT OR IGNORE INTO records(id, clock, kind, bytes) VALUES (?, ?, ?, ?)")
        defer { statement.reset(); statement.clearBindings() }
        try record.id.withUnsafeBytes { try statement.bind(rawBlob: $0, at: 1) }
        try statement.bind(.integer(Int64(bitPattern: record.clock)), at: 2)
        try statement.bind(.integer(Int64(record.kind.rawValue)), at: 3)
        try statement.bind(.blob(record.encoded), at: 4)
        while try statement.step() {}
        return db.changes == 1 ? db.lastInsertRowID : nil
    }

    /// Applies every pair of a newly stored record, stored as arrival number `seq`, under the
    /// write rules.
    func apply(_ record: Record, seq: Int64, opened: OpenedSealedWrite? = nil) throws {
        switch record.body {
        case let .manifest(manifest):
            try blobs.addManifest(manifest, id: record.id)
        case let .file(entry):
            try blobs.applyFile(entry, author: record.author, order: record.order.key)
        case .groupKey, .sealedWrite, .leave:
            // Stored and relayed by every node; shown only by members (Private, §11).
            try applyPrivate(record, seq: seq, opened: opened)
        case let .write(pairs):
            var fold = PairFold(record: record, seq: seq)
            // Worked out once per record, and only when a protected zone needs them.
            var valueEncodings: [ArraySlice<UInt8>]?
            for (index, pair) in pairs.enumerated() {
                try fold.apply(pair, in: self) {
                    if valueEncodings == nil { valueEncodings = record.pairValueEncodings }
                    return valueEncodings![index]
                }
            }
            try fold.finish(in: self)
        case let .largeWrite(write):
            try applyLargeWrite(record, write, seq: seq)
        }
    }

    /// Applies the opened pairs of a sealed write (`encodings` holds each value's canonical
    /// encoding) under the write rules.
    func applyPairs(_ pairs: [WritePair], encodings: [ArraySlice<UInt8>], of record: Record, seq: Int64) throws {
        var fold = PairFold(record: record, seq: seq, sealed: true)
        for (index, pair) in pairs.enumerated() {
            try fold.apply(pair, in: self) { encodings[index] }
        }
        try fold.finish(in: self)
    }

    var materializer: Materializer { Materializer(db: db) }

    /// Folds the pairs of one write record, plain (kind 1), large (kind 4) or sealed and opened
    /// (kind 6), one at a time (Protocol.md §5.3, §5.4, §11.4).
    struct PairFold {
        let record: Record
        let seq: Int64
        /// The record's write-order key (`WriteOrder.key`), worked out when first needed: a
        /// message written once into its own zone never needs it.
        private var orderKey: [UInt8]?
        /// Pairs opened from a sealed write: the only ones that reach into a private conversation
        /// (a plain write's pairs there take no effect, Protocol.md §11.1).
        let sealed: Bool
        /// Whether the record's own bytes hold the pairs (kind 1), so a zone may keep its value
        /// there instead of a second time (`ZoneStore.valueColumns`).
        let inPlainRecord: Bool
        var authorID: String?
        var profileChanged = false

        init(record: Record, seq: Int64, sealed: Bool = false) {
            self.record = record
            self.seq = seq
            self.sealed = sealed
            // Only a record of one pair: a zone's value is read from its record by decoding the
            // record, which for a write of many messages would decode all of them for each one.
            if case let .write(pairs) = record.body, pairs.count == 1 { inPlainRecord = true } else { inPlainRecord = false }
        }

        /// `encodedValue` gives the canonical encoding of the pair's value, asked for only when
        /// the pair falls in a protected zone.
        mutating func apply(_ pair: WritePair, in store: Store, encodedValue: () -> ArraySlice<UInt8>) throws {
            if !sealed, Store.reachesPrivate(pair.path) { return }
            let zone = Zone.of(pair.path)
            switch zone {
            case .open:
                var value = Zone.stripZones(pair.value, at: pair.path)
                if !sealed { value = Store.strippingPrivate(value, at: pair.path) }
                try store.materializer.apply(path: pair.path, value: value, order: order())
            case .user, .message:
                let uid = authorID ?? store.userID(of: record.author)
                authorID = uid
                let record = record
                try store.zones.apply(pair, encodedValue: encodedValue, zone: zone, author: record.author, authorID: uid,
                                      order: { record.order.key }, seq: seq, inPlainRecord: inPlainRecord)
                if case let .user(owner) = zone, owner == uid { profileChanged = true }
            }
        }

        /// The record's write-order key, worked out once.
        mutating func order() -> [UInt8] {
            if let orderKey { return orderKey }
            let key = record.order.key
            orderKey = key
            return key
        }

        /// The users directory follows the author's profile, in the same transaction.
        func finish(in store: Store) throws {
            if profileChanged, !store.rebuildingTree, let authorID { try store.refreshUserDirectory(uid: authorID) }
        }
    }
    var blobs: BlobStore { BlobStore(db: db) }
}
