import Crypto
import Dispatch
import Foundation
import Sync
import Testing
import Transport
import Wire

/// A member's session to a real node, driven by hand: it dials, completes the Noise handshake
/// with its identity and sends its `hello`, then sends whatever bytes or messages a test writes
/// (honest or not), and reads the node's messages only while the test lets it.
final class RawSessionClient: @unchecked Sendable {
    private let queue = DispatchQueue(label: "raw-session-client")
    let identity: PrivateKey
    private var connection: TCPConnection?
    private var handshake: NoiseHandshake?
    private var transport: NoiseTransport?
    private var noiseFrames = FrameReader(maxFrameBytes: NoiseTransport.maxMessageLength, minFrameBytes: 16, prefixBytes: 2)
    private var frames = FrameReader()
    private var received: [SessionMessage] = []
    private var closedFlag = false

    /// The node's messages read so far.
    var messages: [SessionMessage] { queue.sync { received } }
    var isOpen: Bool { queue.sync { transport != nil } }
    var closed: Bool { queue.sync { closedFlag } }

    init(to address: SocketAddress, network: NetworkKey, identity: PrivateKey = PrivateKey()) throws {
        self.identity = identity
        let connection = try TCPConnection.connected(to: address, queue: queue)
        try queue.sync {
            self.connection = connection
            var initiator = try NoiseHandshake(role: .initiator, localStatic: identity.x25519(),
                                               psk: network.sessionPSK.copyBytes(), prologue: PeerSession.prologue)
            let first = try initiator.writeMessage(payload: [])
            handshake = initiator
            connection.start(onRead: { [self] bytes in read(bytes) }, onClose: { [self] _ in closedFlag = true })
            connection.write(Self.noiseFrame(first))
        }
    }

    private static func noiseFrame(_ message: [UInt8]) -> [UInt8] {
        [UInt8(message.count >> 8), UInt8(message.count & 0xFF)] + message
    }

    private func read(_ bytes: [UInt8]) {
        guard let messages = try? noiseFrames.push(bytes) else { connection?.close(); return }
        for message in messages {
            if var open = transport {
                guard let plain = try? open.decrypt(message), let bodies = try? frames.push(plain) else { connection?.close(); return }
                transport = open
                for body in bodies { if let decoded = try? SessionMessage.decode(body) { received.append(decoded) } }
            } else if var initiator = handshake {
                // The responder's message: answer with the last handshake message and our hello.
                guard (try? initiator.readMessage(message)) != nil, let third = try? initiator.writeMessage(payload: []),
                      initiator.isComplete, var open = try? initiator.split() else { connection?.close(); return }
                handshake = nil
                var out = Self.noiseFrame(third)
                let hello = SessionMessage.hello(author: identity.publicKey, instance: secureRandomBytes(Beacon.instanceByteCount),
                                                 recordCount: 0, fingerprint: [UInt8](repeating: 0, count: 16))
                out += Self.seal(hello.framed(), with: &open)
                transport = open
                connection?.write(out)
            }
        }
    }

    /// `stream` cut into Noise transport messages.
    private static func seal(_ stream: [UInt8], with transport: inout NoiseTransport) -> [UInt8] {
        var out = [UInt8]()
        for start in stride(from: 0, to: stream.count, by: NoiseTransport.maxPlaintextLength) {
            let piece = Array(stream[start..<min(start + NoiseTransport.maxPlaintextLength, stream.count)])
            out += noiseFrame(try! transport.encrypt(piece))
        }
        return out
    }

    /// Sends `stream` (session frames, well-formed or not) once the handshake is done.
    func send(stream: [UInt8]) {
        queue.sync {
            guard var open = transport else { Issue.record("send before the handshake finished"); return }
            let bytes = Self.seal(stream, with: &open)
            transport = open
            connection?.write(bytes)
        }
    }

    func send(_ messages: [SessionMessage]) { send(stream: messages.flatMap { $0.framed() }) }

    func pauseReading() { queue.sync { connection?.pauseReading() } }
    func resumeReading() { queue.sync { connection?.resumeReading() } }
    func stop() { queue.sync { connection?.close() } }
}
