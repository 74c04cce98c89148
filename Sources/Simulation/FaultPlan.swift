import Foundation
import SQLite
import TestSupport

/// The chaos phase of a run: the workload's writes and the faults, each at a time drawn from
/// the seed, as events of the driver.
extension SimRun {
    /// Writes and faults at random times, then runs until the chaos phase ends.
    func chaos() throws {
        let end = UInt64(options.chaosSeconds * 1e9)
        func at() -> UInt64 { UInt64.random(in: 2_000_000_000...end, using: &rng) }
        let honest = hosts.filter { !$0.hostile }
        for _ in 0..<options.writes {
            let host = honest.randomElement(using: &rng)!
            driver(at: at(), "write on n\(host.index)") { [unowned self] in try workload.honestWrite(host) }
        }
        if let hostile = hosts.first(where: \.hostile) {
            for _ in 0..<Int.random(in: 4...12, using: &rng) {
                driver(at: at(), "hostile write") { [unowned self] in
                    try workload.hostileWrite(hostile, victims: honest, trueNowMillis: UInt64(Self.epochMillis) + loop.now / 1_000_000)
                }
            }
            if rng.chance(0.5) {
                // The hostile member also writes its own profile, with its clock ahead.
                driver(at: at(), "hostile member's own write") { [unowned self] in try workload.honestWrite(hostile) }
            }
        }
        for _ in 0..<Int.random(in: 0...2, using: &rng) {
            let split = hosts.map { _ in Int.random(in: 0...1, using: &rng) }
            let start = at(), length = UInt64.random(in: 3...20, using: &rng) * 1_000_000_000
            driver(at: start, "partition \(split)") { [unowned self] in
                faults.count(.partition)
                fabric.side = split
            }
            driver(at: start + length, "partition healed") { [unowned self] in fabric.side = hosts.map { _ in 0 } }
        }
        for _ in 0..<Int.random(in: 0...2, using: &rng) {
            let host = hosts.randomElement(using: &rng)!
            let start = at(), down = UInt64.random(in: 500...8000, using: &rng) * 1_000_000
            let orderly = rng.chance(0.25)
            driver(at: start, "\(orderly ? "stop" : "crash") n\(host.index)") { [unowned self] in
                guard host.up else { return }
                if orderly {
                    faults.count(.restart)
                    host.shutdown()
                } else {
                    faults.count(.crash)
                    host.crash()
                }
                driver(at: loop.now + down, "restart n\(host.index)") { [unowned self] in try restart(host) }
            }
        }
        for _ in 0..<Int.random(in: 0...2, using: &rng) {
            let host = hosts.randomElement(using: &rng)!
            let start = at(), length = UInt64.random(in: 1...15, using: &rng) * 1_000_000_000
            driver(at: start, "freeze n\(host.index)") { [unowned self] in
                faults.count(.freeze)
                host.freeze(for: length, now: loop.now)
            }
        }
        if rng.chance(options.burstChance), honest.count >= 2 {
            // A peer stops reading for a while (a stalled process) while a node it has a session
            // with writes a burst of large records: what is queued for it must stay bounded.
            let writer = honest.randomElement(using: &rng)!
            let start = at(), count = Int.random(in: 20...40, using: &rng)
            let pick = rng.next()
            driver(at: start, "stall a peer of n\(writer.index), then a burst of \(count) large records there") { [unowned self] in
                let peers = Set(fabric.hosts[writer.index].connections.compactMap { $0.peer?.host }).sorted()
                let others = hosts.filter { $0 !== writer }
                let stalled = peers.isEmpty ? others[Int(pick % UInt64(others.count))] : hosts[peers[Int(pick % UInt64(peers.count))]]
                loop.note(Self.driver, "stall n\(stalled.index)")
                faults.count(.freeze)
                stalled.freeze(for: 25_000_000_000, now: loop.now)
            }
            for i in 0..<count {
                driver(at: start + 2_000_000_000 + UInt64(i) * 400_000_000, "large record on n\(writer.index)") { [unowned self] in
                    try workload.largeMessage(writer)
                }
            }
        }
        if rng.chance(0.5) {
            let host = hosts.randomElement(using: &rng)!
            let start = at(), length = UInt64.random(in: 5...20, using: &rng) * 1_000_000_000
            let rate = Double.random(in: 50_000...500_000, using: &rng)
            driver(at: start, "slow link n\(host.index)") { [unowned self] in
                faults.count(.slowLink)
                fabric.bandwidth[host.index] = rate
            }
            driver(at: start + length, "link n\(host.index) back") { [unowned self] in fabric.bandwidth[host.index] = 100e6 }
        }
        if rng.chance(0.4) {
            let host = hosts.randomElement(using: &rng)!
            let jump = Int64.random(in: -180_000...120_000, using: &rng)
            driver(at: at(), "clock of n\(host.index) jumps \(jump) ms") { [unowned self] in
                faults.count(.clockJump)
                host.clock.wallAtZero += jump
            }
        }
        if options.sabotage == .dropRecord {
            driver(at: end, "sabotage") { [unowned self] in try dropRecord() }
        }
        loop.run(until: end) { failure != nil }
    }

    /// The deliberate bug: deletes an acknowledged record from a running node's database
    /// behind its back, as a disk that silently lost a committed write would.
    func dropRecord() throws {
        let candidates = hosts.filter { $0.up && !(workload.model.acknowledged[$0.index] ?? []).isEmpty }
        guard let host = candidates.randomElement(using: &rng), let id = workload.model.acknowledged[host.index]?.randomElement(using: &rng) else { return }
        let db = try Connection(path: host.directory + "/store.sqlite")
        try db.run("DELETE FROM records WHERE id = ?", [.blob(id.bytes)])
        faults.count(.droppedRecord)
        loop.note(host.index, "sabotage: dropped record \(id)")
    }
}
