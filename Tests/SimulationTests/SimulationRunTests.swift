import Foundation
import Testing
@testable import Simulation

/// The simulator itself: a seed replays event for event, seeds pass, and a planted bug fails.
@Suite(.serialized)
struct SimulationRunTests {
    static let shape = ["--nodes", "4", "--chaos", "20", "--writes", "15"]

    static func options() -> SimOptions {
        var options = SimOptions()
        options.nodes = 4
        options.chaosSeconds = 20
        options.writes = 15
        return options
    }

    /// `lanchat-sim` beside the test bundle (built by `swift build --build-tests`), run with
    /// `arguments`; its standard output.
    static func simulator(_ arguments: [String]) throws -> (status: Int32, output: String) {
        let binary = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("lanchat-sim")
        guard FileManager.default.isExecutableFile(atPath: binary.path) else {
            throw SimulatorMissing(path: binary.path)
        }
        let process = Process()
        process.executableURL = binary
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    struct SimulatorMissing: Error, CustomStringConvertible {
        let path: String
        var description: String { "lanchat-sim is not built at \(path): run swift build --build-tests" }
    }

    /// Two processes running one seed print the same events, line for line, and the same
    /// digest; another seed is another run.
    @Test func aSeedReplaysEventForEvent() throws {
        let first = try Self.simulator(["--seed", "7", "--trace"] + Self.shape)
        let second = try Self.simulator(["--seed", "7", "--trace"] + Self.shape)
        let other = try Self.simulator(["--seed", "8", "--trace"] + Self.shape)
        #expect(first.status == 0, "\(first.output.suffix(2000))")
        // Everything but the campaign's wall-clock figures.
        func events(_ output: String) -> [Substring] {
            output.split(separator: "\n").filter { !$0.hasPrefix("simulation:") }
        }
        let lines = events(first.output)
        #expect(lines.count > 500)
        #expect(lines == events(second.output))
        #expect(lines.contains { $0.hasPrefix("seed 7: passed") && $0.contains("trace digest") })
        #expect(lines.last == "1 passed, 0 failed")
        #expect(events(other.output) != lines)
    }

    /// In this process too (the library's entry), seeds pass and their checks ran.
    @Test func seedsPassWithFaults() {
        var faults = Set<String>()
        var checks = [String: Int]()
        for seed: UInt64 in 100..<103 {
            let result = SimRun(seed: seed, options: Self.options()).run()
            #expect(result.passed, "seed \(seed): \(result.failure ?? "")")
            for (kind, n) in result.checks { checks[kind, default: 0] += n }
            faults.formUnion(result.faults.keys)
        }
        #expect(checks[InvariantKind.convergence.rawValue] == 3)
        #expect((checks[InvariantKind.bounds.rawValue] ?? 0) > 1000)
        #expect(faults.contains(FaultKind.hostileRecord.rawValue))
    }

    /// A stored record that silently vanishes from one node's database must make the run fail,
    /// and the command line says so with the seed and the command that replays it.
    @Test func aDroppedRecordIsCaught() throws {
        var options = Self.options()
        options.sabotage = .dropRecord
        let result = SimRun(seed: 7, options: options).run()
        #expect(result.faults[FaultKind.droppedRecord.rawValue] == 1)
        #expect(!result.passed)
        let failure = result.failure ?? ""
        // Caught as a record missing, as memory and store disagreeing, or as nodes that cannot
        // agree once healed (the record set still counts the record the store lost).
        #expect(failure.contains("lacks record") || failure.contains("in its store but") || failure.contains("no convergence"), "\(failure)")

        let run = try Self.simulator(["--seeds", "2", "--first", "7", "--break", "drop-record"] + Self.shape)
        #expect(run.status == 1)
        #expect(run.output.contains("FAIL seed 7: "))
        #expect(run.output.contains("replay: Tools/sim --seed 7 --nodes 4 --chaos 20.0 --writes 15 --break drop-record --trace"))
        #expect(run.output.hasSuffix("0 passed, 2 failed\n"))
    }
}
