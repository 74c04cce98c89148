import DiskFaults
import Foundation
import SQLite
import Store
import Testing
import TestSupport
import Tree

/// The store on a disk that fails: for each kind of fault and many seeded positions, every write
/// the store acknowledged survives a power cut, every failed one was reported with a clear error,
/// the store reopens and passes its checks, and it takes writes again once the disk recovers.
///
/// Serialized: the fault disk is one per process (`FaultDisk.exclusive` also keeps other suites
/// out). `LANCHAT_FAULT_SEEDS=N` runs N seeds per kind instead of the default 8 (the campaign in
/// BENCHMARKS.md ran 100); `LANCHAT_FAULT_SEED=K` replays seed K alone (every failure names its seed).
@Suite("Disk faults", .serialized)
struct DiskFaultTests {
    /// The seeds each campaign runs: `LANCHAT_FAULT_SEED=K` replays the one a failure names.
    static let seeds: [UInt64] = {
        let environment = ProcessInfo.processInfo.environment
        if let one = environment["LANCHAT_FAULT_SEED"].flatMap(UInt64.init) { return [one] }
        return Array(0..<UInt64(environment["LANCHAT_FAULT_SEEDS"].flatMap(Int.init) ?? 8))
    }()

    @Test("a fault of each kind at seeded positions: acknowledged writes survive the power cut, failed ones are reported",
          arguments: FaultDisk.Kind.allCases)
    func faultCampaign(kind: FaultDisk.Kind) throws {
        try campaign(kind)
    }

    @Test("a power cut alone, keeping none or part of what was not synced, loses no acknowledged write")
    func powerCutCampaign() throws {
        try campaign(nil)
    }

    private func campaign(_ kind: FaultDisk.Kind?) throws {
        var tally = Tally(kind: kind)
        try FaultDisk.exclusive { disk in
            for seed in Self.seeds {
                let plan = FaultRun.Plan.draw(kind, seed: seed)
                disk.disarm()
                let injectedBefore = kind.map(disk.injected) ?? 0
                let result = try FaultRun.run(plan, on: disk)
                tally.add(result, injected: (kind.map(disk.injected) ?? 0) - injectedBefore)
                check(result)
            }
        }
        print(tally.line)
        // A campaign whose faults never fired proved nothing: say so (a replay of one seed is not
        // a campaign).
        if kind != nil, Self.seeds.count > 1 {
            #expect(tally.fired * 2 >= tally.runs, "\(kind!): the fault fired in only \(tally.fired) of \(tally.runs) runs")
            #expect(tally.reportedErrors > 0, "\(kind!): no operation failed, so no failure path was checked")
        }
    }

    private func check(_ result: FaultRun.Result) {
        let plan = result.plan
        #expect(result.reopenError == nil, "\(plan): the store did not reopen: \(result.reopenError ?? "")")
        guard result.reopenError == nil else { return }
        #expect(result.integrity == ["ok"], "\(plan): check failed: \(result.integrity)")
        #expect(result.violations.isEmpty, "\(plan): \(result.violations)")
        #expect(result.treeMismatch == nil, "\(plan): \(result.treeMismatch ?? "")")
        #expect(result.unclearErrors.isEmpty, "\(plan): \(result.unclearErrors)")
        #expect(result.writeAfterReopen == nil, "\(plan): no write after the reopen: \(result.writeAfterReopen ?? "")")
        if result.recoveredWithoutReopen == false {
            Issue.record("\(plan): the disk recovered but the open store still refused a write: \(result.errors.suffix(2))")
        }
        if plan.kind == .diskFull, !result.errors.isEmpty {
            #expect(result.errors.contains { $0.hasPrefix("disk full") }, "\(plan): a full disk never reported as such: \(result.errors.prefix(3))")
        }
    }

    // MARK: Single faults, told exactly

    @Test("a full disk under a write: the client reads \"disk full\" and the store's path; the same store writes again once there is space")
    func diskFullIsToldAndRecovers() throws {
        try FaultDisk.exclusive { disk in
            let directory = try Self.directory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let store = try Store(path: directory + "/store.sqlite", disk: disk.access)
            let key = PrivateKeyFixture.key
            try store.set(try Path("/a"), to: .number(1), signer: key, nowMillis: 1_000)
            disk.arm(.diskFull, on: .wal, sticky: true)
            do {
                try store.set(try Path("/a"), to: .number(2), signer: key, nowMillis: 2_000)
                Issue.record("a write on a full disk was acknowledged")
            } catch let error as StoreError {
                #expect("\(error)" == "disk full: could not write \(directory)/store.sqlite; free some space and try again")
                #expect(error.isDiskFull)
            }
            #expect(try store.value(at: try Path("/a")) == .number(1))
            #expect(try store.integrityCheck() == ["ok"])
            disk.disarm()
            try store.set(try Path("/a"), to: .number(3), signer: key, nowMillis: 3_000)
            #expect(try store.value(at: try Path("/a")) == .number(3))
        }
    }

    @Test("a full disk under the chunk pack: the upload fails naming the pack, nothing names the lost chunks, and uploads work again after")
    func packDiskFull() throws {
        try FaultDisk.exclusive { disk in
            let directory = try Self.directory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let store = try Store(path: directory + "/store.sqlite", disk: disk.access)
            let key = PrivateKeyFixture.key
            let bytes: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + (0..<150_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
            let path = "images/\(key.publicKey.userID)/a.png"
            disk.arm(.diskFull, on: .pack, after: 1)
            #expect(throws: StoreError.self) { try store.putFile(path, bytes: bytes, signer: key, nowMillis: 1_000) }
            do { try store.putFile(path, bytes: bytes, signer: key, nowMillis: 1_000) } catch {
                Issue.record("the pack's disk was full only once, yet the next upload failed: \(error)")
            }
            disk.arm(.diskFull, on: .pack)
            do {
                try store.putFile(path + "2", bytes: bytes + [1], signer: key, nowMillis: 2_000)
                Issue.record("an upload onto a full disk was acknowledged")
            } catch {
                #expect("\(error)" == "disk full: could not write \(directory)/store.chunks.pack; free some space and try again")
            }
            #expect(try store.fileInfo(path + "2") == nil)
            #expect(try store.readFile(path) == bytes)
            #expect(try store.integrityCheck() == ["ok"])
        }
    }

    @Test("a read error while opening is a clear error, and the store opens once the disk reads again")
    func readErrorOnOpen() throws {
        try FaultDisk.exclusive { disk in
            let directory = try Self.directory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            do {
                let store = try Store(path: directory + "/store.sqlite", disk: disk.access)
                try store.set(try Path("/kept"), to: .string("yes"), signer: PrivateKeyFixture.key, nowMillis: 1_000)
            }
            disk.arm(.readError, on: .mainDB, sticky: true)
            do {
                _ = try Store(path: directory + "/store.sqlite", disk: disk.access)
                Issue.record("the store opened although its file could not be read")
            } catch let error as StoreError {
                guard case let .diskFailure(path, _) = error else {
                    Issue.record("not a disk error: \(error)")
                    return
                }
                #expect(path == directory + "/store.sqlite")
            }
            #expect(disk.fired)
            disk.disarm()
            let store = try Store(path: directory + "/store.sqlite", disk: disk.access)
            #expect(try store.value(at: try Path("/kept")) == .string("yes"))
            #expect(try store.integrityCheck() == ["ok"])
        }
    }

    @Test("an increment whose read of the current value fails is refused, never written as if the value were null")
    func incrementOnReadError() throws {
        try FaultDisk.exclusive { disk in
            let directory = try Self.directory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let key = PrivateKeyFixture.key
            let path = try Path("/n")
            let increment = JSONValue.object([".sv": .object(["increment": .number(1)])])
            do {
                let store = try Store(path: directory + "/store.sqlite", disk: disk.access)
                try store.set(path, to: .number(5), signer: key, nowMillis: 1_000)
            }
            // A fresh store reads its pages from the disk, not from a cache. Only the first read
            // fails: the one of the current value (the write itself would go through).
            let store = try Store(path: directory + "/store.sqlite", disk: disk.access)
            disk.arm(.readError, on: [.mainDB, .wal])
            do {
                try store.set(path, to: increment, signer: key, nowMillis: 2_000)
                Issue.record("an increment was written although the current value could not be read")
            } catch let error as StoreError {
                guard case .diskFailure = error else {
                    Issue.record("not a disk error: \(error)")
                    return
                }
            }
            #expect(disk.fired)
            disk.disarm()
            #expect(try store.value(at: path) == .number(5))
            try store.set(path, to: increment, signer: key, nowMillis: 3_000)
            #expect(try store.value(at: path) == .number(6))
        }
    }

    // MARK: The fault layer itself

    @Test("the power cut really loses what was not synced, and keeps what was")
    func powerCutModel() throws {
        try FaultDisk.exclusive { disk in
            let directory = try Self.directory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let path = directory + "/model.sqlite"
            do {
                let db = try Connection(path: path, vfs: FaultDisk.vfsName)
                try db.execute("PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; CREATE TABLE t(x INTEGER)")
                try db.run("INSERT INTO t VALUES (1)")
                // Commits that are never synced: a power cut must take them back.
                try db.execute("PRAGMA synchronous = OFF")
                for x in 2...50 { try db.run("INSERT INTO t VALUES (?)", [.integer(Int64(x))]) }
                #expect(try db.scalarInt("SELECT count(*) FROM t") == 50)
                disk.crash()
            }
            let undone = disk.powerCut(seed: 1)
            #expect(undone > 0)
            let db = try Connection(path: path, vfs: FaultDisk.vfsName)
            #expect(try db.scalarInt("SELECT count(*) FROM t") == 1)
            #expect(try db.integrityCheck() == ["ok"])
            #expect(disk.operations(.sync, on: .wal) > 0)
            #expect(disk.operations(.write, on: .wal) > 0)
        }
    }

    @Test("a torn write leaves the disk gone until the power cut, and the store reopens sound")
    func tornWriteThenPowerCut() throws {
        try FaultDisk.exclusive { disk in
            let directory = try Self.directory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let key = PrivateKeyFixture.key
            do {
                let store = try Store(path: directory + "/store.sqlite", disk: disk.access)
                try store.set(try Path("/before"), to: .number(1), signer: key, nowMillis: 1_000)
                disk.arm(.tornWrite, on: .wal, after: 1, seed: 7)
                #expect(throws: StoreError.self) { try store.set(try Path("/torn"), to: .string(String(repeating: "t", count: 9000)), signer: key, nowMillis: 2_000) }
                #expect(disk.isCrashed)
                #expect(throws: StoreError.self) { try store.set(try Path("/later"), to: .number(2), signer: key, nowMillis: 3_000) }
            }
            disk.powerCut(seed: 3)
            let store = try Store(path: directory + "/store.sqlite", disk: disk.access)
            #expect(try store.integrityCheck() == ["ok"])
            #expect(try store.value(at: try Path("/before")) == .number(1))
            #expect(try store.value(at: try Path("/later")) == .null)
            #expect(disk.injected(.tornWrite) == 1)
        }
    }

    static func directory() throws -> String {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("lanchat-faults-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        return directory
    }
}

import Crypto

enum PrivateKeyFixture {
    static let key = PrivateKey()
}

/// The measure of a campaign: faults injected and the invariants they were checked against.
struct Tally {
    var kind: FaultDisk.Kind?
    var runs = 0, fired = 0, injected = 0, crashed = 0
    var acknowledged = 0, failedOperations = 0, reportedErrors = 0, invariants = 0
    var recoveredInPlace = 0, recoveryTried = 0, undone = 0, failedButPresent = 0

    mutating func add(_ result: FaultRun.Result, injected count: Int) {
        runs += 1
        if result.fired { fired += 1 }
        injected += count
        if result.crashed { crashed += 1 }
        acknowledged += result.ledger.acknowledged
        failedOperations += result.ledger.failed
        reportedErrors += result.errors.count
        invariants += result.invariantsChecked
        if let recovered = result.recoveredWithoutReopen {
            recoveryTried += 1
            if recovered { recoveredInPlace += 1 }
        }
        undone += result.unsyncedWritesUndone
        failedButPresent += result.failedButPresent
    }

    var line: String {
        "fault campaign | \(kind.map { "\($0)" } ?? "power cut only") | runs \(runs) | fired \(fired) | injected \(injected) | "
            + "disk gone \(crashed) | acknowledged \(acknowledged) | failed \(failedOperations) (present after all \(failedButPresent)) | errors reported \(reportedErrors) | invariants checked \(invariants) | "
            + "wrote again in place \(recoveredInPlace)/\(recoveryTried) | unsynced writes undone \(undone)"
    }
}
