import Crypto
import Sync

/// Negentropy reconciliation (Protocol.md §8.3) against peer messages, as responder and as
/// initiator. Invariants: replies fit the frame size limit and are well-formed; a responder
/// learns nothing; an initiator's `have` ids are its own, its `need` ids are ids the message
/// named (no more of them than it listed), every id is 32 bytes, and `have` holds each of our ids
/// at most once. (A peer may list in a range an id that lies outside it, or list an id twice; then
/// an id we hold, or one id twice, can come back as `need`: redundant `want`s, bounded by the
/// message.)
public enum NegentropyChecks {
    /// Item sets of several sizes (below, at and far above the id-list threshold), with repeated
    /// timestamps so bounds need id prefixes.
    static let itemSets: [NegentropySortedItems] = [0, 3, 31, 32, 300].map { count in
        NegentropySortedItems((0..<count).map { index in
            NegentropyItem(timestamp: 1_000 + UInt64(index / 3), id: BLAKE2b.hash([UInt8(index & 0xFF), UInt8(index >> 8)]))!
        })
    }
    static let frameLimits = [NegentropySession.minimumFrameSizeLimit, 60_000]

    /// The first byte picks the item set and the frame limit; the rest is the peer's message.
    static func setUp(_ input: [UInt8], initiate: Bool) -> (NegentropySession, [UInt8], firstMessage: [UInt8]) {
        var reader = FuzzInput(input)
        let control = reader.byte()
        let items = itemSets[Int(control & 0x7F) % itemSets.count]
        var session = try! NegentropySession(items: items, frameSizeLimit: frameLimits[Int(control >> 7)])
        let first = initiate ? try! session.initiate() : []
        return (session, reader.rest, first)
    }

    static func responder(_ input: [UInt8]) throws(FuzzViolation) {
        let t = FuzzTarget.negentropyResponder
        var (session, message, _) = setUp(input, initiate: false)
        let step: NegentropyStep
        do { step = try session.reconcile(message) } catch {
            return
        }
        try require(session.role == .responder, t, "a session that answered is not the responder")
        try require(step.have.isEmpty && step.need.isEmpty, t, "a responder learned ids")
        try require(parseIDs(message) != nil, t, "accepted a message the reference reader refuses")
        guard let next = step.next else {
            throw FuzzViolation(target: t.rawValue, message: "a responder gave no reply")
        }
        try checkOutgoing(next, session, t)
    }

    static func initiator(_ input: [UInt8]) throws(FuzzViolation) {
        let t = FuzzTarget.negentropyInitiator
        var (session, message, first) = setUp(input, initiate: true)
        try checkOutgoing(first, session, t)
        let step: NegentropyStep
        do { step = try session.reconcile(message) } catch {
            return
        }
        try require(session.role == .initiator, t, "the initiator changed role")
        guard let named = parseIDs(message) else {
            throw FuzzViolation(target: t.rawValue, message: "accepted a message the reference reader refuses")
        }
        let ours = Set(session.items.map(\.id))
        var seen = Set<[UInt8]>()
        for id in step.have {
            try require(id.count == 32, t, "have id of \(id.count) bytes")
            try require(ours.contains(id), t, "have id \(hex(id)) is not one of our items")
            try require(seen.insert(id).inserted, t, "have id \(hex(id)) reported twice")
        }
        try require(step.need.count <= named.listed, t, "\(step.need.count) need ids from \(named.listed) listed")
        for id in step.need {
            try require(id.count == 32, t, "need id of \(id.count) bytes")
            try require(named.ids.contains(id), t, "need id \(hex(id)) was not named in the message")
        }
        if let next = step.next { try checkOutgoing(next, session, t) }
    }

    /// A message we send: within the frame limit and readable by the reference reader.
    static func checkOutgoing(_ message: [UInt8], _ session: NegentropySession, _ t: FuzzTarget) throws(FuzzViolation) {
        try require(message.count <= session.frameSizeLimit, t, "a message of \(message.count) bytes exceeds the frame limit \(session.frameSizeLimit)")
        try require(parseIDs(message) != nil, t, "we sent a message the reference reader refuses: \(hex(message.prefix(64)))")
    }

    /// A small independent reader of Negentropy v1 messages: the ids named in id lists, or nil
    /// when the message is not well-formed (bound order is left to the real reader); `listed`
    /// counts repeats.
    static func parseIDs(_ message: [UInt8]) -> (ids: Set<[UInt8]>, listed: Int)? {
        guard message.first == 0x61 else { return nil }
        var position = 1
        func varint() -> UInt64? {
            var value: UInt64 = 0
            while position < message.count {
                let byte = message[position]
                position += 1
                if value >> 57 != 0 { return nil }
                value = value << 7 | UInt64(byte & 0x7F)
                if byte & 0x80 == 0 { return value }
            }
            return nil
        }
        var ids = Set<[UInt8]>()
        var listed = 0
        while position < message.count {
            guard varint() != nil, let prefix = varint(), prefix <= 32, Int(prefix) <= message.count - position else { return nil }
            position += Int(prefix)
            guard let mode = varint() else { return nil }
            switch mode {
            case 0:
                break
            case 1:
                guard message.count - position >= 16 else { return nil }
                position += 16
            case 2:
                guard let count = varint(), count <= UInt64((message.count - position) / 32) else { return nil }
                for _ in 0..<Int(count) {
                    ids.insert(Array(message[position..<position + 32]))
                    listed += 1
                    position += 32
                }
            default:
                return nil
            }
        }
        return (ids, listed)
    }
}
