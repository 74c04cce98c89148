import Testing
@testable import Sync

/// The Negentropy limits of Protocol.md §9: what a session sends (60,000-byte messages, 16
/// ranges per split, id lists below 32 items) and what it accepts (16 MiB, 1,048,576 ranges),
/// each at the limit and one past it.
@Suite("Negentropy limits")
struct NegentropyLimitTests {
    static func items(_ count: Int, from start: Int = 0) -> [NegentropyItem] {
        (start..<(start + count)).map { (i: Int) -> NegentropyItem in
            var id = [UInt8](repeating: 9, count: 32)
            id[0] = UInt8(truncatingIfNeeded: i >> 16)
            id[1] = UInt8(truncatingIfNeeded: i >> 8)
            id[2] = UInt8(truncatingIfNeeded: i)
            return NegentropyItem(timestamp: UInt64(1000 + i), id: id)!
        }
    }

    @Test("a session's messages fill up to 500,000 bytes and never pass it")
    func sentMessageSize() throws {
        let limit = PeerSession.reconcileFrameLimit
        #expect(limit == 500_000)
        var initiator = try NegentropySession(items: Self.items(120_000), frameSizeLimit: limit)
        var responder = try NegentropySession(items: Self.items(120_000, from: 60_000), frameSizeLimit: limit)
        var message = try initiator.initiate()
        var sizes = [message.count]
        var have = 0, need = 0
        for _ in 0..<1000 {
            guard let reply = try responder.reconcile(message).next else { break }
            sizes.append(reply.count)
            let step = try initiator.reconcile(reply)
            have += step.have.count
            need += step.need.count
            guard let next = step.next else { break }
            sizes.append(next.count)
            message = next
        }
        #expect(have == 60_000 && need == 60_000)
        #expect(sizes.allSatisfy { $0 <= limit }, "largest message \(sizes.max() ?? 0)")
        #expect(sizes.contains { $0 > limit - 1_000 }, "no message came near the limit: \(sizes.max() ?? 0)")
    }

    @Test("a first message splits into 16 ranges from 32 items; 31 items are listed")
    func splitAndList() throws {
        func firstMessageRanges(_ count: Int) throws -> [NegentropyRange] {
            var session = try NegentropySession(items: Self.items(count))
            return try NegentropyMessageReader.decode(try session.initiate(), maxMessageBytes: .max, maxRanges: .max)
        }
        let listed = try firstMessageRanges(31)
        #expect(listed.count == 1)
        if case let .idList(_, count) = listed[0].payload { #expect(count == 31) } else { Issue.record("31 items not listed: \(listed[0].payload)") }
        let split = try firstMessageRanges(32)
        #expect(split.count == 16)
        #expect(split.allSatisfy { if case .fingerprint = $0.payload { true } else { false } })
    }

    @Test("a peer message of 16 MiB is read; 16 MiB + 1 byte is refused")
    func acceptedMessageSize() throws {
        let session = try NegentropySession(items: [NegentropyItem]())
        let max = session.maxMessageBytes
        #expect(max == 16 << 20)
        // A skip range whose bound carries a prefix of `pad` bytes, then a list of `n` ids up to infinity.
        func message(pad: Int, ids n: Int) -> [UInt8] {
            var bytes: [UInt8] = [0x61, 0x02, UInt8(pad)] + [UInt8](repeating: 0x11, count: pad) + [0x00]
            bytes += [0x00, 0x00, 0x02]
            var varint = [UInt8(n & 0x7F)]
            var rest = n >> 7
            while rest > 0 { varint.insert(UInt8(rest & 0x7F) | 0x80, at: 0); rest >>= 7 }
            bytes += varint
            bytes += [UInt8](repeating: 0x22, count: 32 * n)
            return bytes
        }
        let n = (max - 16) / 32
        let probe = message(pad: 0, ids: n)
        let exact = message(pad: max - probe.count, ids: n)
        #expect(exact.count == max)
        let ranges = try NegentropyMessageReader.decode(exact, maxMessageBytes: session.maxMessageBytes, maxRanges: session.maxRanges)
        #expect(ranges.count == 2)
        let over = message(pad: max - probe.count + 1, ids: n)
        #expect(over.count == max + 1)
        #expect(throws: NegentropyError.messageTooLarge(max + 1)) {
            try NegentropyMessageReader.decode(over, maxMessageBytes: session.maxMessageBytes, maxRanges: session.maxRanges)
        }
    }

    @Test("a peer message of 1,048,576 ranges is read; one more range is refused")
    func acceptedRanges() throws {
        let session = try NegentropySession(items: [NegentropyItem]())
        let max = session.maxRanges
        #expect(max == 1 << 20)
        // Empty skip ranges one millisecond apart, the last up to infinity.
        func message(ranges: Int) -> [UInt8] {
            var bytes = [UInt8](repeating: 0, count: 1 + 3 * ranges)  // the last range: infinity, skip
            bytes[0] = 0x61
            bytes.withUnsafeMutableBufferPointer { buffer in
                for range in 0..<(ranges - 1) { buffer[1 + 3 * range] = 0x02 }
            }
            return bytes
        }
        let atLimit = try NegentropyMessageReader.decode(message(ranges: max), maxMessageBytes: session.maxMessageBytes, maxRanges: max)
        #expect(atLimit.count == max)
        #expect(throws: NegentropyError.tooManyRanges) {
            try NegentropyMessageReader.decode(message(ranges: max + 1), maxMessageBytes: session.maxMessageBytes, maxRanges: max)
        }
    }
}
