import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// `lanchat-sim`: runs seeds, prints a line per failure with the command that replays it,
/// the figures of the campaign, and last `N passed, M failed`.
public enum SimCommand {
    static let usage = "usage: lanchat-sim [--seeds N] [--first S] [--nodes K] [--seed S --trace] [--chaos SECONDS] [--writes N] [--break drop-record] [--benchmarks FILE]"

    /// The executable's entry: re-executes itself with deterministic hashing if needed (a
    /// dictionary iterates in an order set by a per-process hash seed, and a seed replays only
    /// with the same order in every process), runs, and exits with the status.
    public static func commandLineMain() -> Never {
        if getenv("SWIFT_DETERMINISTIC_HASHING") == nil {
            setenv("SWIFT_DETERMINISTIC_HASHING", "1", 1)
            execv("/proc/self/exe", CommandLine.unsafeArgv)
        }
        exit(main(Array(CommandLine.arguments.dropFirst())))
    }

    /// Runs the command with `arguments` (without the program name); returns the exit status.
    public static func main(_ arguments: [String]) -> Int32 {
        var options = SimOptions()
        var seeds = 50
        var first: UInt64 = 1
        var single: UInt64?
        var benchmarks: String?
        var index = 0
        func value() -> String? {
            index += 1
            return index < arguments.count ? arguments[index] : nil
        }
        while index < arguments.count {
            switch arguments[index] {
            case "-h", "--help", "help":
                print(usage)
                return 0
            case "--seeds": guard let n = value().flatMap(Int.init), n > 0 else { return bad("--seeds needs a positive number") }; seeds = n
            case "--first": guard let n = value().flatMap(UInt64.init) else { return bad("--first needs a number") }; first = n
            case "--seed": guard let n = value().flatMap(UInt64.init) else { return bad("--seed needs a number") }; single = n
            case "--nodes": guard let n = value().flatMap(Int.init), (1...200).contains(n) else { return bad("--nodes needs 1...200") }; options.nodes = n
            case "--chaos": guard let n = value().flatMap(Double.init), n >= 3 else { return bad("--chaos needs at least 3 seconds") }; options.chaosSeconds = n
            case "--writes": guard let n = value().flatMap(Int.init), n >= 0 else { return bad("--writes needs a number") }; options.writes = n
            case "--trace": options.trace = true
            case "--benchmarks": guard let path = value() else { return bad("--benchmarks needs a file") }; benchmarks = path
            case "--break":
                guard let name = value(), let sabotage = Sabotage(rawValue: name) else { return bad("--break takes drop-record") }
                options.sabotage = sabotage
            default: return bad("unknown argument \(arguments[index])")
            }
            index += 1
        }
        let list: [UInt64] = single.map { [$0] } ?? (0..<UInt64(seeds)).map { first + $0 }
        var campaign = Campaign(options: options)
        for seed in list {
            let result = campaign.run(seed)
            if options.trace || single != nil {
                print("seed \(seed): \(result.passed ? "passed" : "FAILED: " + result.failure!) (\(result.events) events, trace digest \(String(result.traceDigest, radix: 16)))")
            }
        }
        print(campaign.report())
        if let benchmarks {
            do { try campaign.writeSection(to: benchmarks, command: (["Tools/sim"] + arguments.filter { $0 != "--benchmarks" && $0 != benchmarks }).joined(separator: " ")) } catch {
                FileHandle.standardError.write(Data("Error: cannot write \(benchmarks): \(error)\n".utf8))
                return 1
            }
        }
        print("\(campaign.passed) passed, \(campaign.failed) failed")
        return campaign.failed == 0 ? 0 : 1
    }

    private static func bad(_ message: String) -> Int32 {
        FileHandle.standardError.write(Data("Error: \(message)\n\(usage)\n".utf8))
        return 64
    }
}

/// Seeds run so far and their figures.
public struct Campaign {
    let options: SimOptions
    public private(set) var passed = 0
    public private(set) var failed = 0
    var simulatedSeconds = 0.0
    var events = 0
    var faults: [String: Int] = [:]
    var checks: [String: Int] = [:]
    let started = Date()

    public init(options: SimOptions) { self.options = options }

    /// Runs one seed; a failure is printed at once with its replay command.
    public mutating func run(_ seed: UInt64) -> SimResult {
        let result = SimRun(seed: seed, options: options).run()
        simulatedSeconds += result.simulatedSeconds
        events += result.events
        for (kind, n) in result.faults { faults[kind, default: 0] += n }
        for (kind, n) in result.checks { checks[kind, default: 0] += n }
        if result.passed {
            passed += 1
        } else {
            failed += 1
            var replay = "Tools/sim --seed \(seed) --nodes \(options.nodes)"
            if options.chaosSeconds != SimOptions().chaosSeconds { replay += " --chaos \(options.chaosSeconds)" }
            if options.writes != SimOptions().writes { replay += " --writes \(options.writes)" }
            if let sabotage = options.sabotage { replay += " --break \(sabotage.rawValue)" }
            print("FAIL seed \(seed): \(result.failure!)")
            print("  replay: \(replay) --trace")
        }
        return result
    }

    /// Seeds and simulated hours per wall-clock minute, faults by kind, invariants checked.
    public func report() -> String {
        let minutes = max(Date().timeIntervalSince(started), 0.001) / 60
        let seeds = passed + failed
        var lines = ["simulation: \(seeds) seeds, \(events) events, \(format(simulatedSeconds / 3600)) simulated hours in \(format(minutes * 60)) s: "
            + "\(format(Double(seeds) / minutes)) seeds/min, \(format(simulatedSeconds / 3600 / minutes)) simulated hours/min"]
        lines.append("faults injected:")
        for (kind, n) in faults.sorted(by: { $0.key < $1.key }) { lines.append("  \(n) \(kind)") }
        lines.append("invariants checked:")
        for (kind, n) in checks.sorted(by: { $0.key < $1.key }) { lines.append("  \(n) x \(kind)") }
        return lines.joined(separator: "\n")
    }

    private func format(_ value: Double) -> String { String(format: "%.2f", value) }

    /// Puts the campaign's figures in `path` (BENCHMARKS.md) between `<!-- bench:sim -->` and
    /// `<!-- /bench:sim -->`, replacing what was there, or at the end.
    public func writeSection(to path: String, command: String) throws {
        let minutes = max(Date().timeIntervalSince(started), 0.001) / 60
        let seeds = passed + failed
        let stamp = ISO8601DateFormatter().string(from: Date())
        var lines = ["<!-- bench:sim -->", "## Simulation", "",
                     "Run \(stamp), \(ProcessInfo.processInfo.activeProcessorCount) cores (shared), `\(command)`: \(options.nodes) nodes per seed "
                        + "(the last a hostile member), \(Int(options.chaosSeconds)) s of writes and faults, then healing until quiet. "
                        + "The real `Node` and SQLite, in one thread; a debug build.", "",
                     "| measure | value |", "|---|---|",
                     "| seeds run (passed, failed) | \(seeds) (\(passed), \(failed)) |",
                     "| events run | \(events) |",
                     "| simulated hours | \(format(simulatedSeconds / 3600)) |",
                     "| wall-clock minutes | \(format(minutes)) |",
                     "| **seeds per wall-clock minute** | **\(format(Double(seeds) / minutes))** |",
                     "| **simulated hours per wall-clock minute** | **\(format(simulatedSeconds / 3600 / minutes))** |",
                     "| events per wall-clock second | \(Int(Double(events) / (minutes * 60))) |", "",
                     "| fault injected | count |", "|---|---|"]
        for (kind, n) in faults.sorted(by: { $0.key < $1.key }) { lines.append("| \(kind) | \(n) |") }
        lines += ["", "| invariant | times checked |", "|---|---|"]
        for (kind, n) in checks.sorted(by: { $0.key < $1.key }) { lines.append("| \(kind) | \(n) |") }
        lines.append("<!-- /bench:sim -->")
        let section = lines.joined(separator: "\n")
        var text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? "# Benchmarks\n"
        if let start = text.range(of: "<!-- bench:sim -->"), let end = text.range(of: "<!-- /bench:sim -->"), start.lowerBound < end.upperBound {
            text.replaceSubrange(start.lowerBound..<end.upperBound, with: section)
        } else {
            if !text.hasSuffix("\n") { text += "\n" }
            text += "\n" + section + "\n"
        }
        try text.write(toFile: path, atomically: true, encoding: .utf8)
    }
}
