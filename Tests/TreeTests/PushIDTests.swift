import Testing
import Tree
import TestSupport

@Suite("Push ids")
struct PushIDTests {
    static let alphabet = Set("-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz")

    /// The 12 random characters as base-64 digits.
    func randomDigits(_ id: String) -> [Int] {
        let order = Array("-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz")
        return id.dropFirst(8).map { character in order.firstIndex(of: character) ?? -1 }
    }

    func plusOne(_ digits: [Int]) -> [Int] {
        var result = digits
        var position = result.count - 1
        while position >= 0 {
            if result[position] == 63 { result[position] = 0; position -= 1 } else { result[position] += 1; break }
        }
        return result
    }

    @Test func alphabetIsInASCIIOrder() {
        let bytes = PushIDGenerator.alphabet
        #expect(bytes.count == 64)
        #expect(zip(bytes, bytes.dropFirst()).allSatisfy { $0 < $1 })
    }

    @Test func idsAreWellFormedAndStrictlyIncreasing() throws {
        var generator = PushIDGenerator()
        var rng = SplitMix64(seed: 1)
        var previous = ""
        var now: UInt64 = 1_700_000_000_000
        for step in 0..<5000 {
            if step % 500 == 0 { now += UInt64(step % 3) } // mostly the same millisecond
            let id = generator.next(nowMillis: now, using: &rng)
            #expect(id.count == 20)
            #expect(id.utf8.count == 20)
            #expect(id.allSatisfy { Self.alphabet.contains($0) })
            #expect(PushIDGenerator.timestamp(of: id) == now)
            if !previous.isEmpty {
                #expect(previous.utf8.lexicographicallyPrecedes(id.utf8), "\(previous) !< \(id)")
                #expect(FirebaseOrder.keyLess(previous, id))
                if PushIDGenerator.timestamp(of: previous) == now {
                    #expect(randomDigits(id) == plusOne(randomDigits(previous)), "same ms: random part + 1")
                }
            }
            previous = id
        }
    }

    @Test func encodesTimeMostSignificantFirst() {
        var generator = PushIDGenerator()
        var rng = SplitMix64(seed: 3)
        #expect(generator.next(nowMillis: 0, using: &rng).prefix(8) == "--------")
        var other = PushIDGenerator()
        #expect(other.next(nowMillis: 65, using: &rng).prefix(8) == "------00")
        var max = PushIDGenerator()
        #expect(max.next(nowMillis: (1 << 48) - 1, using: &rng).prefix(8) == "zzzzzzzz")
        for millis: UInt64 in [1, 63, 64, 1_700_000_000_000, 281_474_976_710_655] {
            var fresh = PushIDGenerator()
            #expect(PushIDGenerator.timestamp(of: fresh.next(nowMillis: millis, using: &rng)) == millis)
        }
    }

    @Test func staysMonotonicWhenTheClockGoesBackwards() {
        var generator = PushIDGenerator()
        var rng = SplitMix64(seed: 11)
        let first = generator.next(nowMillis: 2_000_000, using: &rng)
        let second = generator.next(nowMillis: 1_000_000, using: &rng)
        #expect(first < second)
        #expect(PushIDGenerator.timestamp(of: second) == 2_000_000)
        #expect(randomDigits(second) == plusOne(randomDigits(first)))
        var previous = second
        var clock = SplitMix64(seed: 12)
        for _ in 0..<2000 {
            let now = 1_999_990 + clock.next() % 20
            let id = generator.next(nowMillis: now, using: &rng)
            #expect(previous < id)
            previous = id
        }
    }

    @Test func timestampRejectsNonIDs() {
        #expect(PushIDGenerator.timestamp(of: "") == nil)
        #expect(PushIDGenerator.timestamp(of: "abc") == nil)
        #expect(PushIDGenerator.timestamp(of: String(repeating: "a", count: 21)) == nil)
        #expect(PushIDGenerator.timestamp(of: "-------.------------") == nil)
        #expect(PushIDGenerator.timestamp(of: "-------é-----------") == nil)
        #expect(PushIDGenerator.timestamp(of: "-------0------------") == 1)
    }
}
