import Testing
@testable import Simulation

/// The simulator itself: a seed replays event for event, seeds pass, and a planted bug fails.
@Suite(.serialized)
struct SimulationRunTests {
    static func options() -> SimOptions {
        var options = SimOptions()
        options.nodes = 4
        options.chaosSeconds = 20
        options.writes = 15
        return options
    }

    @Test func aSeedReplaysEventForEvent() {
        let first = SimRun(seed: 7, options: Self.options()).run()
        let second = SimRun(seed: 7, options: Self.options()).run()
        #expect(first.passed, "\(first.failure ?? "")")
        #expect(first.events > 1000)
        #expect(first.events == second.events)
        #expect(first.traceDigest == second.traceDigest)
        let other = SimRun(seed: 8, options: Self.options()).run()
        #expect(other.traceDigest != first.traceDigest)
    }

    @Test func seedsPassWithFaults() {
        var faults = Set<String>()
        for seed: UInt64 in 100..<103 {
            let result = SimRun(seed: seed, options: Self.options()).run()
            #expect(result.passed, "seed \(seed): \(result.failure ?? "")")
            #expect((result.checks[InvariantKind.convergence.rawValue] ?? 0) == 1)
            #expect((result.checks[InvariantKind.bounds.rawValue] ?? 0) > 1000)
            faults.formUnion(result.faults.keys)
        }
        #expect(faults.contains(FaultKind.hostileRecord.rawValue))
    }

    /// A stored record that silently vanishes from one node's database must make the run fail.
    @Test func aDroppedRecordIsCaught() {
        var options = Self.options()
        options.sabotage = .dropRecord
        let result = SimRun(seed: 7, options: options).run()
        #expect(result.faults[FaultKind.droppedRecord.rawValue] == 1)
        #expect(!result.passed)
        let failure = result.failure ?? ""
        #expect(failure.contains("lacks record") || failure.contains("in its store but"), "\(failure)")
    }
}
