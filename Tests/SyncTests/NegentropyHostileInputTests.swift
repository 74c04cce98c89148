import Testing
@testable import Sync
import TestSupport

@Suite("Negentropy hostile input")
struct NegentropyHostileInputTests {
    /// A valid first message (16 fingerprints over ~40 items) and a valid responder reply that
    /// holds an id list, plus fresh sessions to throw bytes at.
    struct Setup {
        var initiator: NegentropySession
        var responder: NegentropySession
        var query: [UInt8]
        var idListReply: [UInt8]

        init() throws {
            let big = NegentropyFixture.make(size: 48, scenario: .randomBothSides, seed: 4)
            let small = NegentropyFixture.make(size: 10, scenario: .randomBothSides, seed: 5)
            var initiator = try NegentropySession(items: big.a)
            query = try initiator.initiate()
            self.initiator = initiator
            responder = try NegentropySession(items: big.b)

            var smallInitiator = try NegentropySession(items: small.a)
            var smallResponder = try NegentropySession(items: small.b)
            idListReply = try #require(try smallResponder.reconcile(try smallInitiator.initiate()).next)
            #expect(idListReply.count > 32)
        }
    }

    /// Feeds `message` to the given roles (both by default) and checks the invariants that must
    /// hold whatever the bytes. Checks are plain comparisons, recorded only on failure, because
    /// these loops run a hundred thousand times.
    static func feed(_ message: [UInt8], to setup: Setup, roles: [NegentropySession.Role] = [.initiator, .responder]) {
        for role in roles {
            var session = role == .initiator ? setup.initiator : setup.responder
            guard let step = try? session.reconcile(message) else { continue }
            let idsAre32Bytes = step.have.allSatisfy { $0.count == 32 } && step.need.allSatisfy { $0.count == 32 }
            // Needed ids come from the message, so they cannot outnumber what it could hold.
            let needBounded = step.need.count * 32 <= message.count
            let replyFits = (step.next?.count ?? 0) <= session.frameSizeLimit
            let responderSilent = role == .initiator || (step.have.isEmpty && step.need.isEmpty && step.next != nil)
            if !(idsAre32Bytes && needBounded && replyFits && responderSilent) {
                Issue.record("bad step as \(role) for \(message): \(step)")
            }
        }
    }

    @Test("random bytes never crash")
    func randomBytes() throws {
        let setup = try Setup()
        var rng = SplitMix64(seed: 1234)
        for round in 0..<3000 {
            var message = (0..<Int(rng.next() % 300)).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
            if round % 2 == 0, !message.isEmpty { message[0] = NegentropySession.protocolVersion }
            Self.feed(message, to: setup)
        }
    }

    @Test("every truncation of valid messages is handled")
    func truncations() throws {
        let setup = try Setup()
        for message in [setup.query, setup.idListReply] {
            for length in 0...message.count {
                Self.feed(Array(message.prefix(length)), to: setup)
            }
        }
    }

    /// Each message goes to the role that would receive it: queries to the responder, replies
    /// to the initiator (random bytes above already reach both roles).
    @Test("every single-byte mutation of valid messages is handled", arguments: [NegentropySession.Role.responder, .initiator])
    func mutations(receiver: NegentropySession.Role) throws {
        let setup = try Setup()
        let message = receiver == .responder ? setup.query : setup.idListReply
        for position in message.indices {
            for value in 0...255 where value != Int(message[position]) {
                var mutated = message
                mutated[position] = UInt8(value)
                Self.feed(mutated, to: setup, roles: [receiver])
            }
        }
    }

    @Test("each malformed construction fails with its own error")
    func specificErrors() throws {
        var session = try NegentropySession(items: [NegentropyItem](), maxMessageBytes: 100, maxRanges: 2)
        let cases: [([UInt8], NegentropyError)] = [
            ([], .truncated),
            ([0x62], .unsupportedVersion(0x62)),
            ([0x61, 0x01], .truncated),                                  // bound without prefix length
            ([0x61, 0x00, 0x02, 0xAA], .truncated),                      // prefix shorter than declared
            ([0x61, 0x00, 0x00, 0x01, 0x01, 0x02], .truncated),          // fingerprint cut short
            ([0x61, 0x01, 0x00, 0x00], .invalidBoundOrder),              // first range empty
            ([0x61, 0x05, 0x00, 0x00, 0x01, 0x00, 0x00], .invalidBoundOrder), // repeated bound
            ([0x61, 0x00, 0x00, 0x00, 0x05, 0x00, 0x00], .timestampOverflow), // finite range after infinity
            ([0x61, 0x05, 0x01, 0x09, 0x00, 0x01, 0x01, 0x08, 0x00], .invalidBoundOrder), // prefix goes backwards
            ([0x61] + Array(repeating: 0xFF, count: 10) + [0x7F], .varintOverflow),
            ([0x61, 0x80, 0x01], .nonMinimalVarint),
            ([0x61, 0x81, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x7F, 0x00, 0x00, 0x03, 0x00], .timestampOverflow),
            ([0x61, 0x02, 0x21], .idPrefixTooLong(33)),
            ([0x61, 0x00, 0x00, 0x03], .invalidMode(3)),
            ([0x61, 0x00, 0x00, 0x02, 0x02] + Array(repeating: 0, count: 32), .idListCountExceedsMessage(2)),
            ([0x61, 0x00, 0x00, 0x02, 0x81, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00], .idListCountExceedsMessage(1 << 63)),
            ([0x61] + Array(repeating: 0x00, count: 100), .messageTooLarge(101)),
            ([0x61, 0x02, 0x00, 0x00, 0x02, 0x00, 0x00, 0x02, 0x00, 0x00], .tooManyRanges),
        ]
        for (message, error) in cases {
            #expect(throws: error, "\(message)") { try session.reconcile(message) }
        }
        #expect(session.role == nil, "a rejected message must not change the session")
        #expect(NegentropySession.unsupportedVersionReply == [0x61])

        // The version-only reply is itself a valid, complete message for an initiator.
        var initiator = try NegentropySession(items: [NegentropyItem]())
        _ = try initiator.initiate()
        #expect(try initiator.reconcile(NegentropySession.unsupportedVersionReply).isComplete)
    }

    @Test("an empty infinity-to-infinity range, as the reference emits at frame edges, is accepted")
    func repeatedInfinity() throws {
        let id = Array(repeating: UInt8(9), count: 32)
        var initiator = try NegentropySession(items: [NegentropyItem]())
        _ = try initiator.initiate()
        // IdList up to infinity, then a closing fingerprint of the (empty) rest, also at infinity.
        let message = [0x61, 0x00, 0x00, 0x02, 0x01] + id + [0x00, 0x00, 0x01] + NegentropyFingerprint.of([])
        let step = try initiator.reconcile(message)
        #expect(step.need == [id])
        #expect(step.isComplete)
    }

    @Test("a duplicated id in a peer's list is reported once")
    func duplicateIDs() throws {
        var initiator = try NegentropySession(items: [NegentropyItem]())
        _ = try initiator.initiate()
        let id = Array(repeating: UInt8(7), count: 32)
        let step = try initiator.reconcile([0x61, 0x00, 0x00, 0x02, 0x02] + id + id)
        #expect(step.need == [id])
        #expect(step.have.isEmpty)
    }
}
