import Crypto
import Sync

/// The Noise_XXpsk3 responder (Protocol.md §8.1) reading hostile handshake messages. Mode 0: the
/// input is message 1. Mode 1: a real message 1 is read, then the input is message 3. Mode 2: the
/// real message 3 with one byte changed, cut or extended as the input says. Invariants: after
/// any failure every later call fails as unusable; message 3 is accepted only as the real one
/// (it carries the PSK), and then both sides agree on the keys.
public enum NoiseChecks {
    static let psk = NetworkKey.named("fuzz").sessionPSK.copyBytes()
    static let prologue = Array("lanchat/session/v1".utf8)
    static let initiatorStatic = try! PrivateKey(seedBytes: [UInt8](repeating: 1, count: 32)).x25519()
    static let responderStatic = try! PrivateKey(seedBytes: [UInt8](repeating: 2, count: 32)).x25519()
    static let initiatorEphemeral = try! X25519PrivateKey(bytes: [UInt8](repeating: 0x11, count: 32))
    static let responderEphemeral = try! X25519PrivateKey(bytes: [UInt8](repeating: 0x22, count: 32))

    static func freshResponder() -> NoiseHandshake {
        try! NoiseHandshake(role: .responder, localStatic: responderStatic, psk: psk, prologue: prologue, ephemeral: responderEphemeral)
    }

    /// The handshake run honestly up to message 3: (responder after message 2, initiator after
    /// message 3, message 3).
    static let honest: (responder: NoiseHandshake, initiator: NoiseHandshake, message3: [UInt8]) = {
        var initiator = try! NoiseHandshake(role: .initiator, localStatic: initiatorStatic, psk: psk, prologue: prologue,
                                            ephemeral: initiatorEphemeral)
        var responder = freshResponder()
        let m1 = try! initiator.writeMessage(payload: [])
        _ = try! responder.readMessage(m1)
        let m2 = try! responder.writeMessage(payload: [])
        _ = try! initiator.readMessage(m2)
        let m3 = try! initiator.writeMessage(payload: [])
        return (responder, initiator, m3)
    }()

    static func responder(_ input: [UInt8]) throws(FuzzViolation) {
        let t = FuzzTarget.noiseResponder
        var reader = FuzzInput(input)
        let mode = reader.byte() % 3
        if mode == 0 {
            var responder = freshResponder()
            let message = reader.rest
            do {
                _ = try responder.readMessage(message)
            } catch {
                try checkUnusable(&responder, t)
                return
            }
            try require(message.count >= 48 && message.count <= NoiseHandshake.maxMessageLength, t, "message 1 of \(message.count) bytes accepted")
            try require(!responder.isComplete, t, "complete after message 1")
            _ = try? responder.writeMessage(payload: [])
            return
        }
        var responder = honest.responder
        var message: [UInt8]
        if mode == 1 {
            message = reader.rest
        } else {
            message = honest.message3
            let how = reader.byte(), position = Int(reader.byte()) % message.count, value = reader.byte()
            switch how % 3 {
            case 0: message[position] ^= value
            case 1: message.removeLast(position)
            default: message += reader.rest
            }
        }
        let payload: [UInt8]
        do { payload = try responder.readMessage(message) } catch {
            try require(message != honest.message3, t, "the honest message 3 was refused")
            try checkUnusable(&responder, t)
            return
        }
        try require(message == honest.message3, t, "a forged message 3 was accepted: \(hex(message))")
        try require(payload.isEmpty && responder.isComplete, t, "accepted message 3 did not complete the handshake")
        try require(responder.remoteStatic == initiatorStatic.publicKey, t, "wrong remote static key")
        let initiator = honest.initiator
        try require(responder.handshakeHash == initiator.handshakeHash, t, "handshake hashes differ")
        var opened: [UInt8]?
        do {
            var a = try initiator.split(), b = try responder.split()
            opened = try b.decrypt(try a.encrypt([1, 2, 3]))
        } catch {
            opened = nil
        }
        try require(opened == [1, 2, 3], t, "the transports of the two sides do not agree")
    }

    /// After a failure the handshake is dead: every later call throws.
    static func checkUnusable(_ handshake: inout NoiseHandshake, _ t: FuzzTarget) throws(FuzzViolation) {
        try require(!handshake.isComplete && handshake.handshakeHash.isEmpty, t, "a failed handshake kept its state")
        try require((try? handshake.writeMessage(payload: [])) == nil, t, "a failed handshake still writes")
        try require((try? handshake.readMessage([UInt8](repeating: 0, count: 64))) == nil, t, "a failed handshake still reads")
    }
}
