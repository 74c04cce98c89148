import Crypto
import Sync

/// Shared set-up for the Noise tests: two parties and a loop that runs the three messages.
struct NoisePair {
    let initiatorKey = X25519PrivateKey()
    let responderKey = X25519PrivateKey()
    var initiator: NoiseHandshake
    var responder: NoiseHandshake

    static let psk = (0..<32).map { UInt8($0) }
    static let prologue = Array("lanchat/1".utf8)

    init(initiatorPSK: [UInt8] = psk, responderPSK: [UInt8] = psk,
         initiatorPrologue: [UInt8] = prologue, responderPrologue: [UInt8] = prologue) throws {
        initiator = try NoiseHandshake(role: .initiator, localStatic: initiatorKey, psk: initiatorPSK, prologue: initiatorPrologue)
        responder = try NoiseHandshake(role: .responder, localStatic: responderKey, psk: responderPSK, prologue: responderPrologue)
    }

    /// Runs all three messages, passing each through `tamper(index, message)` on the way.
    mutating func run(payloads: [[UInt8]] = [[], [], []],
                      tamper: (Int, [UInt8]) -> [UInt8] = { $1 }) throws(NoiseError) -> [[UInt8]] {
        var received: [[UInt8]] = []
        let m1 = try initiator.writeMessage(payload: payloads[0])
        received.append(try responder.readMessage(tamper(0, m1)))
        let m2 = try responder.writeMessage(payload: payloads[1])
        received.append(try initiator.readMessage(tamper(1, m2)))
        let m3 = try initiator.writeMessage(payload: payloads[2])
        received.append(try responder.readMessage(tamper(2, m3)))
        return received
    }
}
