import Testing
import TestSupport
@testable import Sync

@Suite("Growing record set")
struct NegentropyGrowingSetTests {
    /// Random items, with some sharing a timestamp (the id breaks the tie).
    func items(_ count: Int, seed: UInt64) -> [NegentropyItem] {
        var rng = SplitMix64(seed: seed)
        return (0..<count).map { _ in
            NegentropyItem(timestamp: rng.next() % 1_000, id: (0..<32).map { _ in UInt8(truncatingIfNeeded: rng.next()) })!
        }
    }

    @Test("items added in any order, with snapshots taken in between, give the snapshots of a set sorted whole",
          arguments: [0, 1, 2, 7, 1000])
    func snapshotsMatch(seed: UInt64) {
        let all = items(Int(seed % 5) * 300 + 50, seed: seed)
        var set = NegentropyGrowingSet()
        var added = [NegentropyItem]()
        var rng = SplitMix64(seed: seed + 99)
        for item in all {
            let appended = set.append(timestamp: item.timestamp, id: item.id)
            #expect(appended)
            added.append(item)
            if rng.next() % 40 == 0 {
                let snapshot = set.sortedItems()
                #expect(Array(snapshot) == Array(NegentropySortedItems(added)))
                #expect(set.count == added.count)
            }
        }
        let final = set.sortedItems()
        #expect(Array(final) == added.sorted())
        #expect(final.fingerprint(0..<final.count) == NegentropySortedItems(all).fingerprint(0..<all.count))
    }

    @Test("a snapshot a session still reads does not change when the set grows")
    func snapshotIsStable() {
        let all = items(200, seed: 5)
        var set = NegentropyGrowingSet()
        for item in all.prefix(100) { set.append(timestamp: item.timestamp, id: item.id) }
        let held = set.sortedItems()
        let before = Array(held)
        for item in all.dropFirst(100) { set.append(timestamp: item.timestamp, id: item.id) }
        #expect(set.sortedItems().count == 200)
        #expect(Array(held) == before)
    }

    @Test("what cannot be an item is refused; a duplicate added by mistake is still one item in the snapshot")
    func refusals() {
        var set = NegentropyGrowingSet()
        let infinity = set.append(timestamp: .max, id: [UInt8](repeating: 1, count: 32))
        let short = set.append(timestamp: 1, id: [UInt8](repeating: 1, count: 31))
        #expect(!infinity && !short)
        #expect(set.count == 0)
        set.append(timestamp: 1, id: [UInt8](repeating: 2, count: 32))
        _ = set.sortedItems()
        set.append(timestamp: 1, id: [UInt8](repeating: 2, count: 32))
        #expect(set.sortedItems().count == 1)
    }
}
