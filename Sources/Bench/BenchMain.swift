import Foundation
import Wire

/// `lanchat-bench [NAME...] [--records N] [--no-write]`: runs benchmarks that each measure their
/// own ceiling in the same run and print ratios against it (absolute times drift between
/// machines and runs), then records the figures in BENCHMARKS.md.
public enum BenchMain {
    static let benchmarks: [String: @Sendable (BenchOptions) throws -> BenchSection] = [
        "api": APIBenchmark.run,
        "ingest": IngestBenchmark.run,
        "directory": DirectoryBenchmark.run,
        "mesh": MeshBenchmark.run,
        "images": ImageBenchmark.run,
        "scale": ScaleBenchmark.run,
        "live": LiveBenchmark.run,
        "private": PrivateBenchmark.run,
        "largewrites": LargeWriteBenchmark.run,
    ]

    public static func run() {
        var names = [String]()
        var options = BenchOptions()
        var arguments = Array(CommandLine.arguments.dropFirst())
        while !arguments.isEmpty {
            let a = arguments.removeFirst()
            switch a {
            case "--records":
                guard let n = arguments.first.flatMap(Int.init), n > 0 else { fail("--records needs a positive integer") }
                options.records = n
                options.recordsGiven = true
                arguments.removeFirst()
            case "--no-write": options.writeFile = false
            case "--huge": options.huge = true
            case "--reconcile-items", "--latency-messages":
                guard let n = arguments.first.flatMap(Int.init), n > 0 else { fail("\(a) needs a positive integer") }
                if a == "--reconcile-items" { options.reconciliationItems = n } else { options.latencyMessages = n }
                arguments.removeFirst()
            case "--quick":
                // A smoke run: small sizes, nothing written.
                options.records = 2_000
                options.reconciliationItems = 20_000
                options.latencyMessages = 50
                options.quick = true
                options.writeFile = false
            case "-h", "--help":
                print("USAGE: lanchat-bench [\(benchmarks.keys.sorted().joined(separator: "|"))]... [--records N] [--quick] [--no-write]")
                print("Writes its figures into BENCHMARKS.md unless --no-write is given.")
                print("largewrites: --huge adds a large write of about 256 MB (262,144 children of 1 KB).")
                print("scale: --records N (default 1000000; 100000 with --quick) generates, imports and syncs a year of chat.")
                exit(0)
            default:
                guard benchmarks[a] != nil else { fail("unknown benchmark '\(a)'") }
                names.append(a)
            }
        }
        if names.isEmpty { names = benchmarks.keys.sorted() }
        for name in names {
            do {
                let section = try benchmarks[name]!(options)
                print(section.markdown)
                if options.writeFile { try section.write(to: options.reportPath) }
            } catch {
                fail("\(name): \(error)")
            }
        }
    }

    static func fail(_ message: String) -> Never {
        FileHandle.standardError.write(Data("Error: \(message)\n".utf8))
        exit(64)
    }
}

/// Settings shared by the benchmarks.
struct BenchOptions {
    var records = 100_000
    var reconciliationItems = 1_000_000
    var latencyMessages = 1_000
    var writeFile = true
    /// Whether `--records` was given, and whether `--quick` was.
    var recordsGiven = false
    var quick = false
    /// largewrites: also a content near the protocol's 256 MiB (`--huge`).
    var huge = false
    /// Records of the scale benchmark: `--records`, else 1M, or 100k with `--quick`.
    var scaleRecords: Int { recordsGiven ? records : (quick ? 100_000 : 1_000_000) }
    /// API queries the scale benchmark times.
    var scaleQueries: Int { quick ? 100 : 40 }
    /// Cold syncs the scale benchmark runs, each to a fresh node: the one of median ratio is
    /// reported. One sync could land in a slow stretch of a shared host (its ratio moved from
    /// 0.52 to 0.66 between runs of one build).
    var scaleColdSyncs: Int { quick ? 1 : 3 }
    var reportPath = "BENCHMARKS.md"
}

/// A benchmark's result as a section of BENCHMARKS.md, replaced in place on each run.
struct BenchSection {
    let name: String
    let lines: [String]

    var markdown: String {
        (["<!-- bench:\(name) -->"] + lines + ["<!-- /bench:\(name) -->"]).joined(separator: "\n")
    }

    func write(to path: String) throws {
        var text = (try? String(contentsOfFile: path, encoding: .utf8))
            ?? "# Benchmarks\n\nWritten by `lanchat-bench` (see README). Each figure is set against a ceiling measured in the same run on the same machine.\n"
        let start = "<!-- bench:\(name) -->", end = "<!-- /bench:\(name) -->"
        if let s = text.range(of: start), let e = text.range(of: end, range: s.upperBound..<text.endIndex) {
            text.replaceSubrange(s.lowerBound..<e.upperBound, with: markdown)
        } else {
            text += "\n" + markdown + "\n"
        }
        try text.write(toFile: path, atomically: true, encoding: .utf8)
    }
}

/// Wall-clock seconds taken by `body`.
func measure(_ body: () throws -> Void) rethrows -> Double {
    let start = DispatchTime.now().uptimeNanoseconds
    try body()
    return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
}

/// Raw Ed25519 verification of `sample`, in records a second: the ceiling that the ingest, mesh
/// and scale benchmarks divide by. With `cores` above one, each core verifies the whole sample
/// at the same time and the rate counts them all: what the cores verify together. With one, the
/// pass runs on the calling thread.
func verifyRate(of sample: [Record], cores: Int = 1) -> Double {
    Double(sample.count * cores) / measure {
        DispatchQueue.concurrentPerform(iterations: cores) { _ in
            for record in sample where !record.verifySignature() { fatalError("a benchmark record's signature did not verify") }
        }
    }
}

/// The middle value (the upper one of the two middle values of an even count).
func median(_ values: [Double]) -> Double {
    values.sorted()[values.count / 2]
}

func rate(_ count: Int, _ seconds: Double) -> String {
    String(format: "%.0f", Double(count) / seconds)
}
