import TestSupport
import Testing
@testable import WebSocket

/// Hostile input: valid streams of frames mutated at random, and random bytes, fed in random
/// pieces. Whatever arrives, the parser ends in events or one sticky failure with a code it may
/// send, never buffers more than its bound allows, and every text it delivers is UTF-8.
@Suite("WebSocket codec: hostile input")
struct HostileInputTests {
    static let bound = 4096

    /// A valid client stream: a few messages, some fragmented, with pings between.
    static func validStream(_ rng: inout SplitMix64) -> [UInt8] {
        var out: [UInt8] = []
        for _ in 0..<(1 + Int(rng.next() % 4)) {
            let length = Int(rng.next() % 300)
            let text = Array(String(repeating: "aé😀", count: length / 7 + 1).utf8.prefix(length))
            let valid = String(decoding: text, as: UTF8.self)
            let bytes = Array(valid.utf8)
            let mask = (0..<4).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
            if rng.chance(0.5), bytes.count > 2 {
                let cut = bytes.count / 2
                out += WebSocketFrameWriter.frame(.text, bytes[..<cut], fin: false, mask: mask)
                out += WebSocketFrameWriter.frame(.ping, [1, 2, 3], mask: mask)
                out += WebSocketFrameWriter.frame(.continuation, bytes[cut...], mask: mask)
            } else {
                out += WebSocketFrameWriter.frame(.text, bytes, mask: mask)
            }
        }
        return out
    }

    static func run(_ stream: [UInt8], _ rng: inout SplitMix64) {
        var parser = WebSocketParser(maxMessageBytes: bound)
        var offset = 0
        var failed: WebSocketFailure?
        while offset < stream.count {
            let size = 1 + Int(rng.next() % 700)
            let end = min(stream.count, offset + size)
            parser.append(stream[offset..<end])
            offset = end
            // Nothing beyond one frame header and the bound is held, plus the piece just added.
            #expect(parser.bufferedBytes <= bound + 14 + size + 125 + 14)
            while true {
                do {
                    guard let event = try parser.next() else { break }
                    if case let .text(bytes) = event {
                        #expect(String(validating: bytes, as: UTF8.self) != nil)
                        #expect(bytes.count <= bound)
                    }
                } catch {
                    #expect(error.code.isValidOnWire)
                    failed = error
                    break
                }
            }
            if let failed {
                #expect(throws: failed) { try parser.next() }
                #expect(parser.bufferedBytes == 0)
                return
            }
        }
    }

    @Test func validStreamsParseWhole() throws {
        var rng = SplitMix64(seed: 1)
        for _ in 0..<200 {
            var parser = WebSocketParser(maxMessageBytes: Self.bound)
            parser.append(Self.validStream(&rng))
            var texts = 0
            while let event = try parser.next() { if case .text = event { texts += 1 } }
            #expect(texts > 0)
            #expect(parser.bufferedBytes == 0)
        }
    }

    @Test func mutatedStreamsKeepTheInvariants() {
        var rng = SplitMix64(seed: 2)
        for _ in 0..<2000 {
            var stream = Self.validStream(&rng)
            for _ in 0..<(1 + Int(rng.next() % 4)) where !stream.isEmpty {
                let at = Int(rng.next() % UInt64(stream.count))
                switch rng.next() % 3 {
                case 0: stream[at] = UInt8(truncatingIfNeeded: rng.next())
                case 1: stream[at] ^= 1 << UInt8(rng.next() % 8)
                default: stream.insert(UInt8(truncatingIfNeeded: rng.next()), at: at)
                }
            }
            Self.run(stream, &rng)
        }
    }

    @Test func randomBytesKeepTheInvariants() {
        var rng = SplitMix64(seed: 3)
        for _ in 0..<2000 {
            let stream = (0..<Int(rng.next() % 600)).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
            Self.run(stream, &rng)
        }
    }
}
