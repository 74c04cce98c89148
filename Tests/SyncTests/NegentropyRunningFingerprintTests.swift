import Testing
import TestSupport
@testable import Sync

@Suite("Running fingerprint")
struct NegentropyRunningFingerprintTests {
    @Test("adding ids one by one gives Negentropy's fingerprint of the set", arguments: [0, 1, 2, 100, 5000])
    func matchesSetFingerprint(count: Int) {
        var rng = SplitMix64(seed: UInt64(count))
        let ids = (0..<count).map { _ in (0..<32).map { _ in UInt8(truncatingIfNeeded: rng.next()) } }
        var running = NegentropyRunningFingerprint()
        for id in ids { running.add(id) }
        #expect(running.count == count)
        #expect(running.fingerprint == NegentropyFingerprint.of(ids))
        #expect(running.fingerprint == NegentropyFingerprint.of(ids.reversed()))
        var fromBytes = NegentropyRunningFingerprint()
        for id in ids { id.withUnsafeBytes { fromBytes.add($0) } }
        #expect(fromBytes.fingerprint == running.fingerprint && fromBytes.count == count)
    }
}
