import Crypto
import Sync
import Testing
import Wire

/// Sealed live values a node cannot open are relayed once each, at a bounded rate per author,
/// with bounded memory (Protocol.md §9, §11.8).
@Suite("Sealed live values relayed unopened")
struct SealedLiveRelayTests {
    static let epoch = try! Digest32(bytes: [UInt8](repeating: 7, count: 32))

    static func value(_ author: PrivateKey, version: UInt64) throws -> SealedLive {
        try SealedLive.signed(by: author, instance: [1, 2, 3, 4, 5, 6, 7, 8], version: version, conversation: "g_AAAAAAAAAAAAAAAAAAAA",
                              epoch: epoch, ciphertext: [UInt8](repeating: 9, count: SealedLive.ciphertextSizes[0]))
    }

    @Test("each (author, version) once; a burst of 40 per author, then 20 a second")
    func onceAndRate() throws {
        var relay = SealedLiveRelay()
        let author = PrivateKey()
        let first = try Self.value(author, version: 1)
        do { let ok = relay.admit(first, now: 0); #expect(ok) }
        do { let ok = relay.admit(first, now: 0); #expect(!ok) }
        do { let ok = relay.admit(first, now: 100); #expect(!ok) }
        var admitted = 1
        for version in 2...100 where relay.admit(try Self.value(author, version: UInt64(version)), now: 0) { admitted += 1 }
        #expect(admitted == 40)
        // Another author has a bucket of its own.
        do { let ok = relay.admit(try Self.value(PrivateKey(), version: 1), now: 0); #expect(ok) }
        // A second later, 20 more.
        admitted = 0
        for version in 200...300 where relay.admit(try Self.value(author, version: UInt64(version)), now: 1) { admitted += 1 }
        #expect(admitted == 20)
    }

    @Test("at most 4,096 pairs remembered and 256 authors with a bucket")
    func bounds() throws {
        var limits = SealedLiveRelay.Limits()
        limits.ratePerSecond = 1e9
        limits.burst = 1e9
        var relay = SealedLiveRelay(limits: limits)
        let author = PrivateKey()
        let first = try Self.value(author, version: 0)
        do { let ok = relay.admit(first, now: 0); #expect(ok) }
        for version in 1...4_096 { do { let ok = relay.admit(try Self.value(author, version: UInt64(version)), now: 0); #expect(ok) } }
        #expect(relay.rememberedCount == 4_096)
        // The oldest was forgotten: relayed once more, the rest still not.
        do { let ok = relay.admit(first, now: 0); #expect(ok) }
        do { let ok = relay.admit(try Self.value(author, version: 4_096), now: 0); #expect(!ok) }

        var few = SealedLiveRelay.Limits()
        few.burst = 2
        var small = SealedLiveRelay(limits: few)
        let authors = (0..<256).map { _ in PrivateKey() }
        for key in authors { do { let ok = small.admit(try Self.value(key, version: 1), now: 0); #expect(ok) } }
        // The 257th author is refused while every bucket is in use, taken once one has refilled.
        let late = PrivateKey()
        do { let ok = small.admit(try Self.value(late, version: 1), now: 0); #expect(!ok) }
        do { let ok = small.admit(try Self.value(late, version: 1), now: 10); #expect(ok) }
    }
}
