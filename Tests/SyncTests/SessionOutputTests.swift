import Crypto
@testable import Sync
import Testing
import Wire

/// The outgoing stream laid out as Noise messages on TCP and sealed in place.
@Suite("Session output")
struct SessionOutputTests {
    private func transports() throws -> (NoiseTransport, NoiseTransport) {
        var pair = try NoisePair()
        _ = try pair.run()
        return (try pair.initiator.split(), try pair.responder.split())
    }

    /// Splits TCP bytes into Noise messages by their u16be lengths.
    private func messages(_ wire: [UInt8]) -> [[UInt8]] {
        var out = [[UInt8]]()
        var offset = 0
        while offset + 2 <= wire.count {
            let length = Int(wire[offset]) << 8 | Int(wire[offset + 1])
            out.append(Array(wire[offset + 2..<offset + 2 + length]))
            offset += 2 + length
        }
        #expect(offset == wire.count)
        return out
    }

    @Test("writes of any size fill whole Noise messages that decrypt, in order, to the stream",
          arguments: [[1], [65_519], [65_520], [5, 70_000, 3, 131_038], [200_000, 1]])
    func stream(sizes: [Int]) throws {
        var (a, b) = try transports()
        var output = SessionOutput()
        var stream = [UInt8]()
        for (index, size) in sizes.enumerated() {
            let bytes = (0..<size).map { UInt8(truncatingIfNeeded: $0 &+ index) }
            output.append(bytes)
            stream += bytes
        }
        let wire = try output.seal(with: &a)
        #expect(output.isEmpty)
        let sealed = messages(wire)
        #expect(sealed.count == (stream.count + NoiseTransport.maxPlaintextLength - 1) / NoiseTransport.maxPlaintextLength)
        #expect(sealed.allSatisfy { $0.count <= NoiseTransport.maxMessageLength })
        #expect(try sealed.flatMap { try b.decrypt($0) } == stream)
        // The transport's nonces moved on: the next seal continues where this one stopped.
        output.append([42])
        #expect(try messages(output.seal(with: &a)).map { try b.decrypt($0) } == [[42]])
    }

    @Test("nothing written seals to nothing and uses no nonce")
    func empty() throws {
        var (a, b) = try transports()
        var output = SessionOutput()
        #expect(try output.seal(with: &a).isEmpty)
        #expect(try b.decrypt(a.encrypt([1])) == [1])
    }
}
