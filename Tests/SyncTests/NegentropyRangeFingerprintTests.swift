import Testing
import TestSupport
@testable import Sync

/// Range fingerprints come from running sums kept every `blockSize` items; each must equal the
/// fingerprint of the range's ids summed one by one, wherever the range starts and ends.
@Suite("Range fingerprints from running sums")
struct NegentropyRangeFingerprintTests {
    func items(_ count: Int, seed: UInt64) -> NegentropySortedItems {
        var rng = SplitMix64(seed: seed)
        return NegentropySortedItems((0..<count).map { _ in
            NegentropyItem(timestamp: rng.next() % 10_000, id: NegentropyFixture.randomID(&rng))!
        })
    }

    /// The fingerprint by its definition: the range's ids added one by one.
    func expected(_ items: NegentropySortedItems, _ range: Range<Int>) -> [UInt8] {
        var sum = NegentropyAccumulator()
        for position in range { sum.add(items.packed(position).id) }
        return sum.fingerprint(count: range.count)
    }

    @Test("every range of sets around the block size", arguments: [0, 1, 63, 64, 65, 127, 128, 129, 200])
    func everyRange(count: Int) {
        let set = items(count, seed: UInt64(count) + 1)
        for lower in 0...count {
            // The range's ids added one by one as its end moves up.
            var sum = NegentropyAccumulator()
            for upper in lower...count {
                if set.fingerprint(lower..<upper) != sum.fingerprint(count: upper - lower) {
                    Issue.record("range \(lower)..<\(upper) of \(count)")
                }
                if upper < count { sum.add(set.packed(upper).id) }
            }
        }
        // And as the protocol defines it, from the ids' bytes.
        #expect(set.fingerprint(0..<count) == NegentropyFingerprint.of(set.map(\.id)))
    }

    @Test("random ranges of a large set, and the whole set and its tails", arguments: [2, 3])
    func randomRanges(seed: UInt64) {
        let count = 5_000 + Int(seed) * 37
        let set = items(count, seed: seed)
        var rng = SplitMix64(seed: seed + 50)
        var ranges = [0..<count, 1..<count, count - 1..<count, count - 64..<count, count / 2..<count]
        for _ in 0..<200 {
            let a = Int(rng.next() % UInt64(count + 1)), b = Int(rng.next() % UInt64(count + 1))
            ranges.append(min(a, b)..<max(a, b))
        }
        for range in ranges { #expect(set.fingerprint(range) == expected(set, range), "range \(range)") }
    }

    @Test("sums that wrap past 2^256 and subtractions that borrow through every limb")
    func carriesAndBorrows() {
        // Ids of all ones and of a single low bit: sums of them carry through all four limbs,
        // and a range's start subtracted from its end borrows through all four.
        let ones = [UInt8](repeating: 0xFF, count: 32)
        var low = [UInt8](repeating: 0, count: 32)
        low[0] = 1
        var high = [UInt8](repeating: 0, count: 32)
        high[31] = 0x80
        var all = [NegentropyItem]()
        for index in 0..<600 {
            let id = index % 3 == 0 ? ones : index % 3 == 1 ? low : high
            var unique = id
            unique[15] ^= UInt8(truncatingIfNeeded: index / 3)
            unique[16] ^= UInt8(truncatingIfNeeded: index / 768)
            all.append(NegentropyItem(timestamp: UInt64(index), id: unique)!)
        }
        let set = NegentropySortedItems(all)
        #expect(set.count == 600)
        for lower in stride(from: 0, through: 600, by: 7) {
            for upper in stride(from: lower, through: 600, by: 13) {
                #expect(set.fingerprint(lower..<upper) == expected(set, lower..<upper))
            }
        }
    }

    @Test("the accumulator's subtraction undoes its addition, mod 2^256")
    func subtractionUndoesAddition() {
        var rng = SplitMix64(seed: 9)
        for _ in 0..<1_000 {
            let a = NegentropyPackedID(bytes: NegentropyFixture.randomID(&rng))
            let b = NegentropyPackedID(bytes: rng.next() % 2 == 0 ? [UInt8](repeating: 0xFF, count: 32) : NegentropyFixture.randomID(&rng))
            var sum = NegentropyAccumulator()
            sum.add(a)
            var other = NegentropyAccumulator()
            other.add(b)
            var both = sum
            both.add(b)
            both.subtract(other)
            #expect(both.bytes == sum.bytes)
            var zero = other
            zero.subtract(other)
            #expect(zero.bytes == [UInt8](repeating: 0, count: 32))
        }
    }
}
