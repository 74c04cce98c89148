import Testing
import Tree
import TestSupport

@Suite("Hybrid logical clock")
struct HybridLogicalClockTests {
    typealias HLC = HybridLogicalClock

    @Test func packsMillisAndCounter() {
        let stamp = HLC.pack(millis: 1_700_000_000_000, counter: 7)
        #expect(stamp == 1_700_000_000_000 << 16 | 7)
        #expect(HLC.millis(of: stamp) == 1_700_000_000_000)
        #expect(HLC.counter(of: stamp) == 7)
        #expect(HLC.counter(of: HLC.pack(millis: 1, counter: .max)) == .max)
    }

    @Test func sendFollowsWallClockOrCounts() {
        var clock = HLC()
        #expect(clock.send(nowMillis: 1000) == 1000 << 16)
        #expect(clock.send(nowMillis: 1000) == 1000 << 16 | 1)
        #expect(clock.send(nowMillis: 999) == 1000 << 16 | 2, "clock went back: counter advances")
        #expect(clock.send(nowMillis: 1001) == 1001 << 16)
        #expect(clock.last == 1001 << 16)
        var resumed = HLC(last: 5000 << 16 | 9)
        #expect(resumed.send(nowMillis: 4000) == 5000 << 16 | 10)
    }

    @Test func counterOverflowCarriesIntoMillis() {
        var clock = HLC(last: HLC.pack(millis: 10, counter: .max))
        #expect(clock.send(nowMillis: 10) == HLC.pack(millis: 11, counter: 0))
    }

    @Test func receiveTakesTheLatestOfThree() throws {
        // Remote ahead: remote + 1.
        var clock = HLC(last: HLC.pack(millis: 100, counter: 3))
        let remote = HLC.pack(millis: 200, counter: 5)
        #expect(try clock.receive(remote, nowMillis: 150) == remote + 1)
        #expect(clock.last == remote + 1)
        // Local ahead: last + 1.
        clock = HLC(last: HLC.pack(millis: 300, counter: 3))
        #expect(try clock.receive(HLC.pack(millis: 200, counter: 9), nowMillis: 250) == HLC.pack(millis: 300, counter: 4))
        // Wall clock ahead of both: now << 16.
        clock = HLC(last: HLC.pack(millis: 300, counter: 3))
        #expect(try clock.receive(HLC.pack(millis: 200, counter: 9), nowMillis: 400) == HLC.pack(millis: 400, counter: 0))
        // Equal remote and last: one past both.
        clock = HLC(last: HLC.pack(millis: 500, counter: 1))
        #expect(try clock.receive(HLC.pack(millis: 500, counter: 1), nowMillis: 10) == HLC.pack(millis: 500, counter: 2))
    }

    @Test func refusesRemotesTooFarAhead() throws {
        var clock = HLC(last: HLC.pack(millis: 1000, counter: 0), maxDrift: 60_000)
        let now: UInt64 = 1000
        let edge = HLC.pack(millis: now + 60_000, counter: 99)
        #expect(clock.accepts(edge, nowMillis: now))
        let beyond = HLC.pack(millis: now + 60_001, counter: 0)
        #expect(!clock.accepts(beyond, nowMillis: now))
        let before = clock
        #expect(throws: ClockError.tooFarAhead(remoteMillis: now + 60_001, localMillis: now)) {
            try clock.receive(beyond, nowMillis: now)
        }
        #expect(clock.last == before.last, "state unchanged on throw")
        #expect(try clock.receive(edge, nowMillis: now) == edge + 1)
        #expect(HLC().maxDrift == 5 * 60 * 1000)
        #expect(ClockError.tooFarAhead(remoteMillis: 70, localMillis: 10).description.contains("60 ms ahead"))
    }

    @Test func staysMonotonicWithAWanderingWallClock() {
        var rng = SplitMix64(seed: 77)
        var clock = HLC()
        var peer = HLC()
        var wall: UInt64 = 1_700_000_000_000
        var previous: UInt64 = 0
        for _ in 0..<10_000 {
            // The wall clock jitters back and forth, sometimes far back.
            let step = Int64(rng.next() % 21) - 12
            wall = UInt64(max(0, Int64(wall) + step))
            if rng.next() % 500 == 0 { wall -= 10_000 }
            let stamp: UInt64
            if rng.next() % 3 == 0 {
                let remote = peer.send(nowMillis: wall + rng.next() % 50)
                do {
                    stamp = try clock.receive(remote, nowMillis: wall)
                    #expect(stamp > remote)
                } catch {
                    Issue.record("unexpected drift rejection: \(error)")
                    continue
                }
            } else {
                stamp = clock.send(nowMillis: wall)
            }
            #expect(stamp > previous)
            #expect(HLC.millis(of: stamp) >= wall)
            previous = stamp
        }
    }
}
