import Crypto
import DiskFaults
import Foundation
import SQLite
import Store
import TestSupport
import Tree
import Wire

/// One seeded run against a store on the fault disk: writes through the store's write path (the
/// one the local API and CLI use), ingest of a peer's records and stored files, with a fault armed
/// part-way; then a power cut, a reopen, and every check. Replayable from its seed.
struct FaultRun {
    /// A scenario: which fault, on which files, how often.
    struct Plan: CustomStringConvertible {
        var kind: FaultDisk.Kind?
        var files: FaultDisk.Files
        var after: Int
        var sticky: Bool
        var keepUnsyncedPercent: Int
        var seed: UInt64

        var description: String {
            let fault = kind.map { "\($0) on \(Plan.name(files)) after \(after)\(sticky ? ", sticky" : ", once")" } ?? "no fault"
            return "seed \(seed): \(fault), power cut keeping \(keepUnsyncedPercent)% of unsynced writes"
        }

        static func name(_ files: FaultDisk.Files) -> String {
            if files == .all { return "all files" }
            var names = [String]()
            if files.contains(.mainDB) { names.append("db") }
            if files.contains(.wal) { names.append("wal") }
            if files.contains(.journal) { names.append("journal") }
            if files.contains(.pack) { names.append("pack") }
            if files.contains(.other) { names.append("temp") }
            return names.joined(separator: "+")
        }

        /// A plan for `kind` drawn from `seed`: the classes of file a fault of that kind can hit,
        /// a position within the run, once or sticky, and how much of the unsynced data the power
        /// cut keeps.
        static func draw(_ kind: FaultDisk.Kind?, seed: UInt64) -> Plan {
            var rng = SplitMix64(seed: seed &* 0x9E37_79B9 &+ UInt64(kind?.rawValue ?? 0))
            let choices: [FaultDisk.Files] = [.all, .wal, .mainDB, .pack, [.wal, .pack]]
            let files = choices[Int(rng.next() % UInt64(choices.count))]
            let after = Int(rng.next() % (kind == .readError ? 20 : 30))
            let sticky = rng.next() % 3 == 0
            let keep = [0, 0, 30, 70][Int(rng.next() % 4)]
            return Plan(kind: kind, files: files, after: after, sticky: sticky, keepUnsyncedPercent: keep, seed: seed)
        }
    }

    /// What a run saw, for the checks and the tally.
    struct Result {
        var plan: Plan
        var fired = false
        var crashed = false
        var ledger = FaultLedger()
        /// Errors the client got, as it read them.
        var errors: [String] = []
        /// Errors that were not the clear disk error expected (a failure of the test).
        var unclearErrors: [String] = []
        /// Whether a write succeeded again on the same open store after the disk recovered (nil:
        /// the disk was gone, so only a reopen could tell).
        var recoveredWithoutReopen: Bool?
        var reopenError: String?
        var integrity: [String] = []
        var violations: [String] = []
        var treeMismatch: String?
        var writeAfterReopen: String?
        var unsyncedWritesUndone = 0
        var failedButPresent = 0
        var invariantsChecked = 0
    }

    let disk: FaultDisk
    let plan: Plan
    let directory: String
    var rng: SplitMix64
    let owner = PrivateKey()
    let peer = PrivateKey()
    var now: UInt64 = 1_800_000_000_000
    var peerClockMillis: UInt64 = 1_799_999_000_000
    var result: Result
    var step = 0
    var chunkWriter: ChunkWriter?
    /// Chunks stored through the chunk writer, and whether it acknowledged them.
    var fetchedChunks: [(chunk: VerifiedChunk, acknowledged: Bool)] = []

    init(disk: FaultDisk, plan: Plan) {
        self.disk = disk
        self.plan = plan
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("lanchat-faults-\(UUID().uuidString)").path
        rng = SplitMix64(seed: plan.seed)
        result = Result(plan: plan)
    }

    var storePath: String { directory + "/store.sqlite" }

    /// Runs the whole scenario and returns what it saw; the directory is removed afterwards.
    static func run(_ plan: Plan, on disk: FaultDisk, operations: Int = 24) throws -> Result {
        var run = FaultRun(disk: disk, plan: plan)
        try FileManager.default.createDirectory(atPath: run.directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: run.directory) }
        try run.execute(operations: operations)
        return run.result
    }

    private mutating func execute(operations: Int) throws {
        var store: Store? = try Store(path: storePath, disk: disk.access)
        // Where a running node stores the chunks it fetches: a connection and pack descriptor of
        // their own, with synchronous=NORMAL (a power cut may take back its last entries, never
        // leave an entry without its bytes).
        chunkWriter = try store!.chunkWriter()
        // Checkpoints as a running node's background checkpointer makes them, on a connection of
        // their own and with errors ignored, but often, so that faults reach the database files.
        var checkpointer: Connection? = try Connection(path: storePath, vfs: FaultDisk.vfsName)
        var chunkCheckpointer: Connection? = try Connection(path: store!.chunkPath, vfs: FaultDisk.vfsName)
        for _ in 0..<6 { operate(store!) }
        if let kind = plan.kind {
            disk.arm(kind, on: plan.files, after: plan.after, sticky: plan.sticky, seed: plan.seed)
        }
        for index in 0..<operations {
            operate(store!)
            if index % 4 == 3 {
                _ = try? checkpointer?.checkpointPassive()
                _ = try? chunkCheckpointer?.checkpointPassive()
            }
            // A sticky fault clears up after a while: the disk recovers (space freed, the cable
            // reseated).
            if plan.sticky, disk.fired, rng.chance(0.25) { disk.disarm() }
        }
        result.fired = disk.fired
        disk.disarm()
        result.crashed = disk.isCrashed
        if !result.crashed {
            // The disk works again: the same open store takes writes, without a restart.
            let before = result.ledger.failed
            step += 1
            setOwnPath(store!)
            result.recoveredWithoutReopen = result.ledger.failed == before
        }

        // The power goes: nothing more reaches the disk, the process's connections are dropped
        // without a clean close, and what was not synced is lost (or partly kept, torn).
        disk.crash()
        store = nil
        chunkWriter = nil
        checkpointer = nil
        chunkCheckpointer = nil
        result.unsyncedWritesUndone = disk.powerCut(seed: plan.seed ^ 0x5EED, keepUnsyncedPercent: plan.keepUnsyncedPercent)

        let reopened: Store
        do {
            reopened = try Store(path: storePath, disk: disk.access)
        } catch {
            result.reopenError = "\(error)"
            return
        }
        result.integrity = try reopened.integrityCheck()
        result.violations = try result.ledger.violations(in: reopened)
        result.failedButPresent = try result.ledger.failedButPresent(in: reopened)
        result.treeMismatch = try Self.treeMismatch(reopened, now: now)
        // A fetched chunk is held with its own bytes or not at all (then it is fetched again).
        for (chunk, _) in fetchedChunks {
            if let bytes = try reopened.chunk(chunk.hash), bytes != chunk.bytes {
                result.violations.append("fetched chunk \(chunk.hash) holds other bytes")
            }
        }
        result.invariantsChecked = 4 + result.ledger.sets.count + result.ledger.counter.count
            + result.ledger.peerRecords.count + result.ledger.files.count
        do {
            try reopened.set(try Path("/after/reopen"), to: .bool(true), signer: owner, nowMillis: now + 1_000)
            if try reopened.value(at: try Path("/after/reopen")) != .bool(true) { result.writeAfterReopen = "the write did not read back" }
        } catch {
            result.writeAfterReopen = "\(error)"
        }
    }

    /// The tree is a pure function of the records: a fresh store given the reopened store's
    /// records must show the same tree. Nil when it does.
    static func treeMismatch(_ store: Store, now: UInt64) throws -> String? {
        var records = [Record]()
        try store.forEachRecord { records.append(try Record.decode($0)) }
        let fresh = try Store(path: ":memory:")
        let report = try fresh.ingest(records, nowMillis: now + 3_600_000)
        guard report.refused.isEmpty else { return "a fresh store refused \(report.refused.count) of the records" }
        let expected = try fresh.value(at: .root)
        let found = try store.value(at: .root)
        return expected == found ? nil : "tree \(found.serialized().prefix(200)) != rebuilt \(expected.serialized().prefix(200))"
    }

    // MARK: Operations

    /// One operation of the mix, with what the client was told noted in the ledger.
    private mutating func operate(_ store: Store) {
        step += 1
        now += 7
        switch rng.next() % 20 {
        case 0..<9: setOwnPath(store)
        case 9..<12: setCounter(store)
        case 12..<16: ingestPeerBatch(store)
        case 16: storeFetchedChunks()
        default: putFile(store)
        }
        // Reads go on between writes; a read that fails must say so clearly, like a write.
        if rng.chance(0.3), let file = result.ledger.files.last(where: { $0.outcome == .acknowledged }) {
            do { _ = try store.readFile(file.path) } catch { noteError(error) }
        }
    }

    private mutating func setOwnPath(_ store: Store) {
        let path = try! Path("/faults/w\(step)")
        let value = JSONValue.object(["step": .number(Double(step)), "text": .string(String(repeating: "x", count: Int(rng.next() % 600)))])
        do {
            try store.set(path, to: value, signer: owner, nowMillis: now)
            result.ledger.sets.append((path, value, .acknowledged))
        } catch {
            noteError(error)
            result.ledger.sets.append((path, value, .failed))
        }
    }

    private mutating func setCounter(_ store: Store) {
        let value = JSONValue.number(Double(step))
        do {
            try store.set(FaultLedger.counterPath, to: value, signer: owner, nowMillis: now)
            result.ledger.counter.append((value, .acknowledged))
        } catch {
            noteError(error)
            result.ledger.counter.append((value, .failed))
        }
    }

    private mutating func ingestPeerBatch(_ store: Store) {
        var batch = [Record]()
        for index in 0..<Int(1 + rng.next() % 4) {
            peerClockMillis += 3
            let pair = WritePair(path: try! Path("/peer/p\(step)_\(index)"), value: .string("from a peer \(rng.next())"))
            batch.append(try! Record.make(body: .write([pair]), clock: peerClockMillis << 16, signer: peer))
        }
        do {
            _ = try store.ingest(batch, nowMillis: now)
            for record in batch { result.ledger.peerRecords.append((record, .acknowledged)) }
        } catch {
            noteError(error)
            for record in batch { result.ledger.peerRecords.append((record, .failed)) }
        }
    }

    private mutating func storeFetchedChunks() {
        var chunks = [VerifiedChunk]()
        for _ in 0..<Int(1 + rng.next() % 3) {
            let bytes = (0..<Store.chunkSize).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
            chunks.append(VerifiedChunk(hash: BLAKE2b.digest256(bytes), bytes: bytes)!)
        }
        do {
            try chunkWriter?.put(chunks)
            fetchedChunks += chunks.map { ($0, true) }
        } catch {
            noteError(error)
            fetchedChunks += chunks.map { ($0, false) }
        }
    }

    private mutating func putFile(_ store: Store) {
        // PNG's signature, then noise: one to three chunks.
        let size = 8 + Int(rng.next() % UInt64(3 * Store.chunkSize - 8))
        var bytes: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        bytes.reserveCapacity(size)
        while bytes.count < size { bytes.append(UInt8(truncatingIfNeeded: rng.next())) }
        let path = "images/\(owner.publicKey.userID)/f\(step).png"
        do {
            try store.putFile(path, bytes: bytes, signer: owner, nowMillis: now)
            result.ledger.files.append((path, bytes, .acknowledged))
        } catch {
            noteError(error)
            result.ledger.files.append((path, bytes, .failed))
        }
    }

    /// A failure must be the disk's, told as such with the file it hit.
    private mutating func noteError(_ error: any Error) {
        let text = "\(error)"
        result.errors.append(text)
        guard let storeError = error as? StoreError else {
            result.unclearErrors.append("not a store error: \(type(of: error)): \(text)")
            return
        }
        switch storeError {
        case let .diskFull(path), let .diskFailure(path, _):
            if !path.hasPrefix(directory) { result.unclearErrors.append("names no file of the store: \(text)") }
            if case .diskFull = storeError, !text.hasPrefix("disk full") { result.unclearErrors.append("a full disk not said as such: \(text)") }
        default:
            result.unclearErrors.append("not a disk error: \(text)")
        }
    }
}
