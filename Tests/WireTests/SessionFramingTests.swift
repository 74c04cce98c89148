import Crypto
import Testing
@testable import Wire

/// The session stream's framing as the receive and send paths use it: frames handed out as
/// slices of the receive buffer, decoded where they lie, and chunk frames written without
/// encoding the chunk into an intermediate array.
@Suite("Session framing")
struct SessionFramingTests {
    static let hash = BLAKE2b.digest256(Array("chunk".utf8))

    @Test("a chunk frame's prefix and its bytes are exactly the framed message",
          arguments: [1, 23, 24, 255, 256, 65_535, 65_536, 1 << 20])
    func chunkPrefix(count: Int) {
        let bytes = (0..<count).map { UInt8(truncatingIfNeeded: $0) }
        #expect(SessionMessage.chunkFramePrefix(Self.hash, byteCount: count) + bytes == SessionMessage.chunk(Self.hash, bytes).framed())
    }

    @Test("frames taken with next() from any cut of the stream are those push() returns, and decode in place")
    func slicesAcrossCuts() throws {
        let messages: [SessionMessage] = [
            .wantChunks([Self.hash, Self.hash]), .chunk(Self.hash, [UInt8](repeating: 7, count: 70_000)),
            .noChunks([Self.hash]), .records([[1, 2, 3], []]), .chunk(Self.hash, [9]),
        ]
        let stream = messages.flatMap { $0.framed() }
        for cut in [1, 3, 4096, 65_519, 70_010, stream.count] {
            var reader = FrameReader()
            var decoded = [SessionMessage]()
            var offset = 0
            while offset < stream.count {
                reader.append(stream[offset..<min(offset + cut, stream.count)])
                offset += cut
                while let body = try reader.next() { decoded.append(try SessionMessage.decode(body)) }
            }
            #expect(decoded == messages)
            #expect(reader.bufferedCount == 0)
            var arrays = FrameReader()
            #expect(try arrays.push(stream).map { try SessionMessage.decode($0) } == messages)
        }
    }

    @Test("decoding a slice reports the same errors, at the same offsets, as decoding a copy")
    func sliceErrors() {
        let good = SessionMessage.chunk(Self.hash, [1, 2, 3]).encoded()
        let broken = [Array(good.dropLast()), good + [0], [0x83, 0x07, 0x58, 0x01, 0xAA, 0x41, 0x01], [0x9F, 0x07]]
        for bytes in broken {
            let padded = [0xEE, 0xEE] + bytes + [0xEE]
            let slice = padded[2..<2 + bytes.count]
            #expect(outcome { try CBORDecoder.decode(slice) } == outcome { try CBORDecoder.decode(bytes) })
            #expect(outcome { try SessionMessage.decode(slice) } == outcome { try SessionMessage.decode(bytes) })
        }
    }

    @Test("a fill that fails adds nothing; a frame length out of bounds is refused before buffering")
    func appendAndBounds() throws {
        var reader = FrameReader(maxFrameBytes: 10)
        #expect(!reader.append(count: 8) { _ in false })
        #expect(reader.bufferedCount == 0)
        #expect(reader.append(count: 5) { raw in raw.copyBytes(from: [0, 0, 0, 1, 42]); return true })
        #expect(try reader.next() == [42])
        reader.append([0, 0, 0, 11])
        #expect(throws: SessionMessage.DecodeError.frameTooLarge(11)) { try reader.next() }
    }
}

/// What a call returned or threw, as text, so two outcomes compare with `==`.
private func outcome(_ body: () throws -> some Any) -> String {
    do { return "returned \(try body())" } catch { return "threw \(error)" }
}
