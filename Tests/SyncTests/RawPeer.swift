import Crypto
@testable import Sync
import Wire

/// The accepting end of a session driven by hand: it completes the handshake against a
/// `PeerSession` that dialled it, then sends whatever messages a test writes, honest or not,
/// and decodes what the session sends back. For tests of what a session does with a peer
/// that breaks the protocol's expectations.
struct RawPeer {
    let identity: PrivateKey
    private var handshake: NoiseHandshake?
    private var transport: NoiseTransport?
    private var noiseFrames = FrameReader(maxFrameBytes: NoiseTransport.maxMessageLength, minFrameBytes: 16, prefixBytes: 2)
    private var frames = FrameReader()

    init(seed: UInt8, network: NetworkKey) {
        identity = try! PrivateKey(seedBytes: [UInt8](repeating: seed, count: 32))
        handshake = try! NoiseHandshake(role: .responder, localStatic: identity.x25519(),
                                        psk: network.sessionPSK.copyBytes(), prologue: PeerSession.prologue)
    }

    var isOpen: Bool { transport != nil }

    /// Takes the bytes of a session's `.send` actions; returns the handshake reply to hand back
    /// (empty once the handshake is done) and the session messages decoded.
    mutating func receive(_ actions: [PeerSession.Action]) throws -> (reply: [UInt8], messages: [SessionMessage]) {
        var reply = [UInt8]()
        var messages = [SessionMessage]()
        for case let .send(bytes) in actions {
            for message in try noiseFrames.push(bytes) {
                if var transport {
                    for body in try frames.push(try transport.decrypt(message)) { messages.append(try SessionMessage.decode(body)) }
                    self.transport = transport
                } else if var handshake {
                    _ = try handshake.readMessage(message)
                    if handshake.isComplete {
                        transport = try handshake.split()
                        self.handshake = nil
                    } else {
                        reply += NoiseFrame.frame(try handshake.writeMessage(payload: []))
                        self.handshake = handshake
                    }
                }
            }
        }
        return (reply, messages)
    }

    /// The bytes that carry `messages` to the session, each frame cut into Noise messages.
    mutating func send(_ messages: [SessionMessage]) throws -> [UInt8] {
        var out = [UInt8]()
        for message in messages {
            let stream = message.framed()
            for start in stride(from: 0, to: stream.count, by: NoiseTransport.maxPlaintextLength) {
                let piece = Array(stream[start..<min(start + NoiseTransport.maxPlaintextLength, stream.count)])
                out += NoiseFrame.frame(try transport!.encrypt(piece))
            }
        }
        return out
    }

    /// One Noise transport message carrying `plaintext` as it is (no session framing), with its
    /// 2-byte length prefix.
    mutating func sendNoise(_ plaintext: [UInt8]) throws -> [UInt8] {
        NoiseFrame.frame(try transport!.encrypt(plaintext))
    }

    /// A `hello` for this peer's identity.
    func hello() -> SessionMessage {
        .hello(author: identity.publicKey, instance: [UInt8](repeating: 9, count: 8), recordCount: 0,
               fingerprint: [UInt8](repeating: 0, count: 16))
    }

    /// Opens a session from `session` (the dialler) to this peer: handshake and both hellos.
    mutating func connect(_ session: inout PeerSession, source: RecordSource) throws {
        var actions = session.start()
        while true {
            let (reply, _) = try receive(actions)  // the last one holds the session's hello
            if isOpen { break }
            actions = session.receive(reply, from: source)
        }
        _ = session.receive(try send([hello()]), from: source)
    }
}
