import Crypto
import Testing
@testable import Sync

/// The chunk scheduler, sans-IO: which chunks are asked of which peer.
@Suite("Chunk fetcher")
struct ChunkFetcherTests {
    static func hashes(_ n: Int, seed: UInt8 = 0) -> [Digest32] {
        (0..<n).map { BLAKE2b.digest256([seed, UInt8(truncatingIfNeeded: $0), UInt8(truncatingIfNeeded: $0 >> 8)]) }
    }

    /// Requests of one schedule call, by peer.
    static func byPeer(_ requests: [(peer: String, hashes: [Digest32])]) -> [String: [Digest32]] {
        var out = [String: [Digest32]]()
        for (peer, hashes) in requests { out[peer, default: []] += hashes }
        return out
    }

    @Test("requests are spread over every peer, at most `window` in flight each")
    func spreadAndWindow() {
        var fetcher = ChunkFetcher<String>(window: 4, timeout: 10)
        let wanted = Self.hashes(40)
        fetcher.want(wanted)
        fetcher.want(Array(wanted.prefix(10)))  // wanted again: no duplicates
        #expect(fetcher.pendingCount == 40)
        #expect(fetcher.schedule(now: 0).isEmpty)  // no peer yet
        for peer in ["a", "b", "c"] { fetcher.peerJoined(peer) }
        let first = Self.byPeer(fetcher.schedule(now: 1))
        #expect(Set(first.keys) == ["a", "b", "c"])
        #expect(first.values.allSatisfy { $0.count == 4 })
        let asked = first.values.flatMap { $0 }
        #expect(Set(asked).count == 12)
        // Nothing more while every window is full.
        #expect(fetcher.schedule(now: 2).isEmpty)
        // An answer frees one slot of that peer only.
        fetcher.received(first["b"]![0], from: "b")
        let next = Self.byPeer(fetcher.schedule(now: 3))
        #expect(next.keys.sorted() == ["b"] && next["b"]!.count == 1)
        #expect(!asked.contains(next["b"]![0]))
        #expect(fetcher.pendingCount == 39)

        // Draining: every chunk is asked exactly once when all answer.
        var inFlight = first
        inFlight["b"]!.removeFirst()
        inFlight["b"]! += next["b"]!
        var done = 1
        var requested = Set(asked).union(next["b"]!)
        var now = 4.0
        while fetcher.pendingCount > 0 {
            for (peer, hashes) in inFlight {
                for hash in hashes { fetcher.received(hash, from: peer); done += 1 }
            }
            inFlight = Self.byPeer(fetcher.schedule(now: now))
            for (_, hashes) in inFlight {
                #expect(hashes.count <= 4)
                for hash in hashes { #expect(requested.insert(hash).inserted, "asked twice") }
            }
            now += 1
            if now > 100 { break }
        }
        #expect(done == 40 && requested == Set(wanted))
    }

    @Test("with a batch, a peer is asked again only once that many of its slots are free, then up to its window")
    func batchedRefill() {
        var fetcher = ChunkFetcher<String>(window: 8, batch: 4, timeout: 10)
        fetcher.peerJoined("a")
        fetcher.want(Self.hashes(30))
        let first = Self.byPeer(fetcher.schedule(now: 0))["a"]!
        #expect(first.count == 8)
        for (index, hash) in first.prefix(3).enumerated() {
            fetcher.received(hash, from: "a")
            #expect(fetcher.schedule(now: Double(index + 1)).isEmpty, "asked again with only \(index + 1) free")
        }
        fetcher.received(first[3], from: "a")
        #expect(Self.byPeer(fetcher.schedule(now: 5))["a"]?.count == 4)
        #expect(fetcher.inFlightCount == 8)
    }

    @Test("a chunk a peer lacks is asked of another peer")
    func missingGoesElsewhere() {
        var fetcher = ChunkFetcher<String>(window: 8, timeout: 10)
        fetcher.peerJoined("a")
        let hash = Self.hashes(1)[0]
        fetcher.want([hash])
        #expect(Self.byPeer(fetcher.schedule(now: 0)) == ["a": [hash]])
        fetcher.missing([hash], at: "a")
        // Only "a" is connected and it lacks the chunk: nobody is asked.
        #expect(fetcher.schedule(now: 1).isEmpty)
        #expect(fetcher.isWanted(hash))
        fetcher.peerJoined("b")
        #expect(Self.byPeer(fetcher.schedule(now: 2)) == ["b": [hash]])
        fetcher.missing([hash], at: "b")
        // With two peers that both lack it: asked of neither until something changes.
        #expect(fetcher.schedule(now: 3).isEmpty)
        fetcher.peerJoined("c")
        #expect(Self.byPeer(fetcher.schedule(now: 4)) == ["c": [hash]])
        fetcher.received(hash, from: "c")
        #expect(fetcher.pendingCount == 0 && !fetcher.isWanted(hash))
    }

    @Test("a chunk that peer answers 'missing' for does not block the others it has")
    func missingAmongMany() {
        var fetcher = ChunkFetcher<String>(window: 8, timeout: 10)
        fetcher.peerJoined("a")
        fetcher.peerJoined("b")
        let wanted = Self.hashes(4)
        fetcher.want(wanted)
        let first = Self.byPeer(fetcher.schedule(now: 0))
        let fromA = first["a"] ?? []
        #expect(!fromA.isEmpty)
        fetcher.missing(fromA, at: "a")
        let retry = Self.byPeer(fetcher.schedule(now: 1))
        #expect(Set(retry["b"] ?? []) == Set(fromA))
        #expect(retry["a"] == nil)
    }

    @Test("a rejected chunk is asked of another peer, never again of the bad one")
    func rejectedGoesElsewhere() {
        var fetcher = ChunkFetcher<String>(window: 8, timeout: 10)
        fetcher.peerJoined("bad")
        let hash = Self.hashes(1)[0]
        fetcher.want([hash])
        #expect(Self.byPeer(fetcher.schedule(now: 0)) == ["bad": [hash]])
        fetcher.rejected(hash, from: "bad")
        #expect(fetcher.schedule(now: 1).isEmpty)  // the bad peer is not asked again
        fetcher.peerJoined("good")
        #expect(Self.byPeer(fetcher.schedule(now: 2)) == ["good": [hash]])
        fetcher.received(hash, from: "good")
        #expect(fetcher.pendingCount == 0)
    }

    @Test("a rejected chunk while the bad peer stays connected: others keep being asked of it")
    func rejectedKeepsWindow() {
        var fetcher = ChunkFetcher<String>(window: 2, timeout: 10)
        fetcher.peerJoined("bad")
        fetcher.peerJoined("good")
        let wanted = Self.hashes(6)
        fetcher.want(wanted)
        let first = Self.byPeer(fetcher.schedule(now: 0))
        let rejected = first["bad"]![0]
        fetcher.rejected(rejected, from: "bad")
        // The bad peer's window has room again; the rejected chunk goes to "good" when it has room.
        fetcher.received(first["good"]![0], from: "good")
        let next = Self.byPeer(fetcher.schedule(now: 1))
        #expect(next["good"] == [rejected])
        #expect(next["bad"]?.contains(rejected) != true)
    }

    @Test("a peer that leaves has its chunks asked of the others")
    func peerLeftRequeues() {
        var fetcher = ChunkFetcher<String>(window: 3, timeout: 10)
        fetcher.peerJoined("a")
        fetcher.peerJoined("b")
        fetcher.want(Self.hashes(6))
        let first = Self.byPeer(fetcher.schedule(now: 0))
        #expect(first["a"]!.count == 3 && first["b"]!.count == 3)
        fetcher.peerLeft("a")
        #expect(fetcher.schedule(now: 1).isEmpty)  // b's window is full
        for hash in first["b"]! { fetcher.received(hash, from: "b") }
        let next = Self.byPeer(fetcher.schedule(now: 2))
        #expect(next.keys.sorted() == ["b"])
        #expect(Set(next["b"]!) == Set(first["a"]!))
        // A late answer from the peer that left still counts, and is not asked again.
        fetcher.received(first["a"]![0], from: "a")
        #expect(fetcher.pendingCount == 2)
    }

    @Test("an unanswered request times out and goes to another peer")
    func timeoutRequeues() {
        var fetcher = ChunkFetcher<String>(window: 4, timeout: 5)
        fetcher.peerJoined("slow")
        let hash = Self.hashes(1)[0]
        fetcher.want([hash])
        #expect(Self.byPeer(fetcher.schedule(now: 0)) == ["slow": [hash]])
        fetcher.peerJoined("fast")
        #expect(fetcher.schedule(now: 4.9).isEmpty)  // still within the timeout
        #expect(Self.byPeer(fetcher.schedule(now: 5.1)) == ["fast": [hash]])
        // If the only peer times out, it is asked again once nobody else is left to ask.
        var alone = ChunkFetcher<String>(window: 4, timeout: 5)
        alone.peerJoined("slow")
        alone.want([hash])
        _ = alone.schedule(now: 0)
        #expect(alone.schedule(now: 6).isEmpty)
        alone.forgetLacks()
        #expect(Self.byPeer(alone.schedule(now: 7)) == ["slow": [hash]])
    }

    @Test("chunks every peer lacks wait aside until a peer joins or the lacks are forgotten")
    func lackedByEveryPeer() {
        var fetcher = ChunkFetcher<String>(window: 4, timeout: 10)
        let wanted = Self.hashes(10)
        fetcher.want(wanted)
        fetcher.peerJoined("a")
        // "a" lacks every chunk it is asked for: all ten are asked of it once, then no more.
        var askedOfA = [Digest32]()
        for step in 0..<10 {
            let requests = Self.byPeer(fetcher.schedule(now: Double(step)))
            guard let hashes = requests["a"] else { break }
            askedOfA += hashes
            fetcher.missing(hashes, at: "a")
        }
        #expect(Set(askedOfA) == Set(wanted) && askedOfA.count == 10)
        #expect(fetcher.schedule(now: 20).isEmpty)
        #expect(fetcher.pendingCount == 10)
        // One arrives anyway (a push, or an answer from elsewhere): it is no longer wanted.
        fetcher.received(wanted[3], from: "a")
        #expect(fetcher.pendingCount == 9)

        // A new peer is asked for the rest, a window at a time, and never for the one held.
        fetcher.peerJoined("b")
        var askedOfB = [Digest32]()
        for step in 0..<10 {
            let requests = Self.byPeer(fetcher.schedule(now: 30 + Double(step)))
            #expect(requests["a"] == nil)
            guard let hashes = requests["b"] else { break }
            #expect(hashes.count <= 4)
            askedOfB += hashes
            fetcher.missing(hashes, at: "b")
        }
        #expect(Set(askedOfB) == Set(wanted).subtracting([wanted[3]]) && askedOfB.count == 9)
        #expect(fetcher.schedule(now: 50).isEmpty)

        // Forgetting the lacks asks again (peers fetch too, and may hold them now).
        fetcher.forgetLacks()
        let again = fetcher.schedule(now: 60).flatMap(\.hashes)
        #expect(again.count == 8)
        #expect(Set(again).isSubset(of: Set(wanted).subtracting([wanted[3]])))
        for hash in wanted where hash != wanted[3] { fetcher.received(hash, from: "a") }
        #expect(fetcher.pendingCount == 0)
        #expect(fetcher.schedule(now: 70).isEmpty)
    }

    @Test("chunks no peer holds are asked again after a stall less and less often, and soon again once one arrives")
    func stallsBackOff() {
        var fetcher = ChunkFetcher<String>(window: 64, timeout: 10)
        fetcher.peerJoined("a")
        let wanted = Self.hashes(3)
        fetcher.want(wanted)
        /// One stall: whatever is asked, "a" lacks it.
        func askedAndLacked(at now: Double) -> Int {
            let hashes = fetcher.schedule(now: now).flatMap(\.hashes)
            fetcher.missing(hashes, at: "a")
            return hashes.count
        }
        let first = askedAndLacked(at: 0)
        #expect(first == 3)
        // Stalled at each tick; the lacks are forgotten at 1 (the first stall), then 2, 4, 8 s apart.
        var forgotten = [Double]()
        for tick in stride(from: 1.0, through: 40, by: 1) {
            if fetcher.forgetLacksAfterStall(now: tick) { forgotten.append(tick) }
            let asked = askedAndLacked(at: tick)
            #expect(asked == (forgotten.last == tick ? 3 : 0))
        }
        #expect(forgotten == [1, 3, 7, 15, 31])
        // The wait stops growing at its bound.
        var last = forgotten.last!
        var waits = [Double]()
        for tick in stride(from: 41.0, through: 3000, by: 1) where fetcher.forgetLacksAfterStall(now: tick) {
            waits.append(tick - last)
            last = tick
        }
        #expect(waits.max() == ChunkFetcher<String>.maxStallBackoff && waits.suffix(3).allSatisfy { $0 == ChunkFetcher<String>.maxStallBackoff })
        // A chunk arriving is progress: the next stall is retried at once, then backs off again.
        fetcher.received(wanted[0], from: "a")
        let retried = [1.0, 2, 3].map { fetcher.forgetLacksAfterStall(now: last + $0) }
        #expect(retried == [true, false, true])
        #expect(fetcher.pendingCount == 2)
    }
}
