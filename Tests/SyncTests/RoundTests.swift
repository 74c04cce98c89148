import Crypto
import Testing
@testable import Sync
import Wire

/// Reconciliation rounds on one session (Protocol.md §8.3): who starts them, what a round sends
/// when the peer repeats itself, and how much one `want` may cost.
@Suite("Reconciliation rounds")
struct RoundTests {
    let network = NetworkKey.named("test")

    static func records(_ messages: [SessionMessage]) -> [[UInt8]] {
        messages.flatMap { message -> [[UInt8]] in if case let .records(r) = message { r } else { [] } }
    }

    static func wanted(_ messages: [SessionMessage]) -> [Digest32] {
        messages.flatMap { message -> [Digest32] in if case let .want(ids) = message { ids } else { [] } }
    }

    /// A responder's reply saying it holds nothing at all: one IdList range to infinity, empty.
    static func holdingNothing() -> NegentropyMessageWriter {
        var reply = NegentropyMessageWriter()
        reply.append(bound: .infinity)
        reply.append(mode: .idList)
        reply.append(varint: 0)
        return reply
    }

    static func reconciles(_ messages: [SessionMessage]) -> [[UInt8]] {
        messages.compactMap { message in if case let .reconcile(m) = message { m } else { nil } }
    }

    @Test("only the dialler starts rounds: both ends ticking at once run one round, and each record crosses once")
    func oneRoundPerSession() {
        let a = MemoryNode(seed: 1), b = MemoryNode(seed: 2)
        for i in 0..<50 { _ = a.write("a\(i)", clock: UInt64(1000 + i) << 16) }
        for i in 0..<70 { _ = b.write("b\(i)", clock: UInt64(1020 + i) << 16) }
        var pair = SessionPair(a, b, keyA: network, keyB: network)
        pair.run(pair.a.start())
        #expect(pair.a.startsRounds && !pair.b.startsRounds)

        // Both anti-entropy timers fire before either message is delivered.
        let fromA = pair.a.startRound(source: a)
        let fromB = pair.b.startRound(source: b)
        #expect(!fromA.isEmpty && pair.a.isReconciling)
        #expect(fromB.isEmpty && !pair.b.isReconciling, "the accepting side starts no round")
        #expect(pair.a.startRound(source: a).isEmpty, "one round at a time")
        pair.run(fromA)
        #expect(pair.rounds == 1)
        #expect(pair.a.recordsSent == 50 && pair.b.recordsSent == 70, "each record crosses once")
        #expect(Set(a.records.keys) == Set(b.records.keys))
    }

    @Test("a reconcile from the accepting side (a node from before the rule) is answered, not refused")
    func olderPeerStillAnswered() throws {
        let a = MemoryNode(seed: 1)
        _ = a.write("mine", clock: 7 << 16)
        var session = PeerSession(role: .initiator, identity: a.identity, instance: a.instance, networkKey: network)
        var peer = RawPeer(seed: 2, network: network)
        try peer.connect(&session, source: a)
        #expect(session.isEstablished)

        var older = try NegentropySession(items: [NegentropyItem]())
        let actions = session.receive(try peer.send([.reconcile(try older.initiate())]), from: a)
        #expect(!actions.contains { if case .close = $0 { true } else { false } })
        let replies = try peer.receive(actions).messages
        guard case let .reconcileReply(reply)? = replies.first else { Issue.record("no reply: \(replies)"); return }
        #expect(try older.reconcile(reply).need.count == 1)
    }

    @Test("a peer that repeats a range in every reply gets each record once and is asked each id once per round")
    func repeatedRangesMoveNothingTwice() throws {
        let a = MemoryNode(seed: 1)
        for i in 0..<5 { _ = a.write("a\(i)", clock: UInt64(10 + i) << 16) }
        var session = PeerSession(role: .initiator, identity: a.identity, instance: a.instance, networkKey: network)
        var peer = RawPeer(seed: 2, network: network)
        try peer.connect(&session, source: a)

        // "I hold these two ids below 100 ms, and something else above": a's five records are
        // all below, so a sends them and asks for the two; the range above never matches.
        let fakes = (1...2).map { NegentropyPackedID(bytes: [UInt8](repeating: $0, count: 32)) }
        var repeating = NegentropyMessageWriter()
        repeating.append(bound: NegentropyBound(timestamp: 100 << 16, id: .zero, prefixLength: 0))
        repeating.append(mode: .idList)
        repeating.append(varint: fakes.count)
        for id in fakes { repeating.append(id: id) }
        repeating.append(bound: .infinity)
        repeating.append(mode: .fingerprint)
        repeating.append(raw: [UInt8](repeating: 0, count: 16))
        // Then the whole range as empty, which ends the round.
        let closing = Self.holdingNothing()

        var sent = try peer.receive(session.startRound(source: a)).messages
        var recordsSent = 0, idsAsked = [Digest32]()
        for reply in [repeating.bytes, repeating.bytes, repeating.bytes, closing.bytes] {
            #expect(Self.reconciles(sent).count == 1)
            let actions = session.receive(try peer.send([.reconcileReply(reply)]), from: a)
            sent = try peer.receive(actions).messages
            recordsSent += Self.records(sent).count
            idsAsked += Self.wanted(sent)
            if reply == closing.bytes {
                #expect(actions.contains(.roundComplete(sent: 5, requested: 2)))
            }
        }
        #expect(recordsSent == 5)
        #expect(idsAsked.map(\.bytes) == fakes.map(\.bytes))
        #expect(!session.roundEndedAtCap, "a round that finished has nothing more to find at once")
        #expect(!session.isReconciling)

        // Counted again from the start: a new round sends what the peer still lacks.
        _ = try peer.receive(session.startRound(source: a))
        sent = try peer.receive(session.receive(try peer.send([.reconcileReply(closing.bytes)]), from: a)).messages
        #expect(Self.records(sent).count == 5)
    }

    @Test("a round that has asked for maxRoundAskedIDs ids ends there, however many the peer names")
    func roundAskingEnds() throws {
        let a = MemoryNode(seed: 1)
        var session = PeerSession(role: .initiator, identity: a.identity, instance: a.instance, networkKey: network)
        var peer = RawPeer(seed: 2, network: network)
        try peer.connect(&session, source: a)
        _ = try peer.receive(session.startRound(source: a))

        // Each reply names 60,000 new ids below 100 ms, and a range above that never matches.
        let perReply = 60_000
        var asked = 0, replies = 0
        while session.isReconciling {
            var reply = NegentropyMessageWriter()
            reply.append(bound: NegentropyBound(timestamp: 100 << 16, id: .zero, prefixLength: 0))
            reply.append(mode: .idList)
            reply.append(varint: perReply)
            for index in 0..<perReply {
                let n = UInt64(replies * perReply + index)
                reply.append(id: NegentropyPackedID(w0: n, w1: 1, w2: 2, w3: 3))
            }
            reply.append(bound: .infinity)
            reply.append(mode: .fingerprint)
            reply.append(raw: [UInt8](repeating: 0, count: 16))
            replies += 1
            let actions = session.receive(try peer.send([.reconcileReply(reply.bytes)]), from: a)
            #expect(!actions.contains { if case .close = $0 { true } else { false } })
            asked += Self.wanted(try peer.receive(actions).messages).count
            guard replies < 10 else { break }
        }
        let cap = PeerSession.maxRoundAskedIDs
        #expect(!session.isReconciling)
        #expect(replies == (cap + perReply - 1) / perReply, "the round ends at the reply that reaches the cap")
        #expect(asked == replies * perReply, "what that reply named is still asked for")
        #expect(session.roundEndedAtCap, "the node is told to start the next round once these records are in")
    }

    @Test("a want is answered with records until they reach 8 MiB: the one that reaches it is the last")
    func wantAnswerCapped() {
        let a = MemoryNode(seed: 1), b = MemoryNode(seed: 2)
        let big = String(repeating: "x", count: 1_000_000)
        let records = (0..<10).map { b.write(big + "\($0)", clock: UInt64(100 + $0) << 16) }
        var pair = SessionPair(a, b, keyA: network, keyB: network)
        pair.run(pair.a.start())
        pair.run(pair.a.startRound(source: a))
        var total = 0
        let expected = records.prefix { record in
            defer { total += record.count }
            return total < PeerSession.maxWantAnswerBytes
        }.count
        #expect(expected == 9)
        #expect(a.records.count == expected)
        #expect(pair.b.recordsSent == expected)
        pair.run(pair.a.startRound(source: a))
        #expect(a.records.count == 10, "the rest comes in the next round")
    }

    @Test("records a round finds the peer lacks are sent a part at a time as the node asks, each once, and no round starts meanwhile")
    func offersSentInParts() throws {
        let a = MemoryNode(seed: 1)
        let big = String(repeating: "y", count: 100_000)
        for i in 0..<40 { _ = a.write(big + "\(i)", clock: UInt64(100 + i) << 16) }  // 4 MB in all
        var session = PeerSession(role: .initiator, identity: a.identity, instance: a.instance, networkKey: network)
        var peer = RawPeer(seed: 2, network: network)
        try peer.connect(&session, source: a)
        _ = try peer.receive(session.startRound(source: a))

        // "I hold nothing": every record of a is missing there.
        let empty = Self.holdingNothing()
        let actions = session.receive(try peer.send([.reconcileReply(empty.bytes)]), from: a)
        #expect(actions.contains(.roundComplete(sent: 40, requested: 0)))
        var received = Self.records(try peer.receive(actions).messages)
        // The reply's own answer stops at the record that reaches the part's size.
        #expect(received.count == PeerSession.offerPartBytes / 100_000 + 1)
        #expect(session.recordsToOfferCount == 40 - received.count)
        #expect(session.startRound(source: a).isEmpty, "no round while records found missing wait to be sent")

        var parts = 0
        while session.recordsToOfferCount > 0 {
            received += Self.records(try peer.receive(session.serveOffers(from: a, maxBytes: 250_000)).messages)
            parts += 1
        }
        #expect(parts == (40 - 11 + 2) / 3, "three records of 100 kB reach 250 kB")
        #expect(Set(received) == Set(a.records.values) && received.count == 40, "each record once")
        #expect(session.serveOffers(from: a, maxBytes: 250_000).isEmpty)
        #expect(!session.startRound(source: a).isEmpty, "then rounds go on")
    }

    /// A record set of ids without records: enough to make a round find more than
    /// `maxRoundOfferedIDs` ids missing without signing that many records.
    final class IDsOnly: RecordSource {
        let items: NegentropySortedItems
        init(count: Int) {
            items = NegentropySortedItems((0..<count).map { n in
                var id = [UInt8](repeating: 0, count: 32)
                withUnsafeBytes(of: UInt64(n).bigEndian) { id.replaceSubrange(0..<8, with: $0) }
                return NegentropyItem(timestamp: UInt64(n + 1), id: id)!
            })
        }
        func reconciliationItems() -> NegentropySortedItems { items }
        func records(_ ids: [Digest32]) -> [[UInt8]] { ids.map { $0.bytes } }
        func summary() -> (count: UInt64, fingerprint: [UInt8]) { (UInt64(items.count), [UInt8](repeating: 0, count: 16)) }
    }

    @Test("a round that has found maxRoundOfferedIDs of our ids missing ends there, and a later round starts once they are sent")
    func roundOfferingEnds() throws {
        let cap = PeerSession.maxRoundOfferedIDs
        let source = IDsOnly(count: cap + 1000)
        var session = PeerSession(role: .initiator, identity: MemoryNode(seed: 1).identity, instance: [UInt8](repeating: 1, count: 8), networkKey: network)
        var peer = RawPeer(seed: 2, network: network)
        try peer.connect(&session, source: source)
        _ = try peer.receive(session.startRound(source: source))
        let empty = Self.holdingNothing()
        let actions = session.receive(try peer.send([.reconcileReply(empty.bytes)]), from: source)
        #expect(actions.contains(.roundComplete(sent: cap, requested: 0)))
        #expect(!session.isReconciling)
        var offered = Self.records(try peer.receive(actions).messages).count
        offered += session.recordsToOfferCount
        #expect(offered == cap)
        while session.recordsToOfferCount > 0 { _ = try peer.receive(session.serveOffers(from: source, maxBytes: 8 << 20)) }
        _ = try peer.receive(session.startRound(source: source))
        let next = session.receive(try peer.send([.reconcileReply(empty.bytes)]), from: source)
        #expect(next.contains(.roundComplete(sent: cap, requested: 0)), "a peer still lacking everything is offered as much again")
    }
}
