import Foundation
import FuzzChecks
import Testing

/// Replays every committed seed and regression input of every fuzz target (Tools/fuzzing/corpus and
/// Tools/fuzzing/regressions) through the same checks the libFuzzer targets run, so a regression
/// fails `swift test` without libFuzzer.
@Suite("Fuzz corpus and regression replay")
struct FuzzReplayTests {
    /// Tools/fuzzing, found from this file's location.
    static let fuzzDirectory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Tools/fuzzing")

    static func inputs(_ kind: String, _ target: FuzzTarget) -> [URL] {
        let directory = fuzzDirectory.appendingPathComponent(kind).appendingPathComponent(target.rawValue)
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        return names.filter { !$0.hasPrefix(".") }.sorted().map { directory.appendingPathComponent($0) }
    }

    @Test("every target has a seed corpus", arguments: FuzzTarget.allCases)
    func corpusExists(_ target: FuzzTarget) {
        #expect(!Self.inputs("corpus", target).isEmpty, "no seeds in Tools/fuzzing/corpus/\(target.rawValue)")
    }

    @Test("seeds and regressions keep the invariants", arguments: FuzzTarget.allCases)
    func replay(_ target: FuzzTarget) throws {
        for url in Self.inputs("corpus", target) + Self.inputs("regressions", target) {
            let bytes = [UInt8](try Data(contentsOf: url))
            #expect(throws: Never.self, "\(target.rawValue): \(url.lastPathComponent)") { try target.check(bytes) }
        }
    }
}
