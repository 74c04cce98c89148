import Crypto
import Sync
import Testing

@Suite("Noise XXpsk3 handshake")
struct NoiseHandshakeTests {
    @Test("a full handshake delivers payloads, agrees on h, and authenticates both statics")
    func fullHandshake() throws {
        var pair = try NoisePair()
        let payloads = [Array("one".utf8), [], Array("three".utf8)]
        #expect(try pair.run(payloads: payloads) == payloads)
        #expect(pair.initiator.isComplete && pair.responder.isComplete)
        #expect(pair.initiator.handshakeHash.count == 64)
        #expect(pair.initiator.handshakeHash == pair.responder.handshakeHash)
        #expect(pair.initiator.remoteStatic == pair.responderKey.publicKey)
        #expect(pair.responder.remoteStatic == pair.initiatorKey.publicKey)
    }

    @Test("transport messages flow both ways with counting nonces")
    func transport() throws {
        var pair = try NoisePair()
        _ = try pair.run()
        var a = try pair.initiator.split()
        var b = try pair.responder.split()
        #expect(a.remoteStatic == pair.responderKey.publicKey)
        #expect(b.handshakeHash == a.handshakeHash)
        for i in 0..<5 {
            let ping = Array("ping \(i)".utf8)
            let sealed = try a.encrypt(ping)
            #expect(sealed.count == ping.count + 16)
            #expect(try b.decrypt(sealed) == ping)
            let pong = Array("pong \(i)".utf8)
            #expect(try a.decrypt(b.encrypt(pong)) == pong)
        }
        // Same plaintext twice gives different ciphertexts: the nonce moved on.
        let first = try a.encrypt([1]), second = try a.encrypt([1])
        #expect(first != second)
        #expect(try b.decrypt(first) == [1])
        #expect(try b.decrypt(second) == [1])
        #expect(try b.decrypt(a.encrypt([])) == [])
    }

    @Test("static keys from Ed25519 identities: remote static is the peer identity's X25519 form")
    func identities() throws {
        let alice = PrivateKey(), bob = PrivateKey()
        var i = try NoiseHandshake(role: .initiator, localStatic: alice.x25519(), psk: NoisePair.psk, prologue: [])
        var r = try NoiseHandshake(role: .responder, localStatic: bob.x25519(), psk: NoisePair.psk, prologue: [])
        _ = try r.readMessage(i.writeMessage(payload: []))
        _ = try i.readMessage(r.writeMessage(payload: []))
        _ = try r.readMessage(i.writeMessage(payload: []))
        #expect(try i.remoteStatic == bob.publicKey.x25519())
        #expect(try r.remoteStatic == alice.publicKey.x25519())
    }

    @Test("a wrong network key fails at the responder on message 3 and leaves nothing usable")
    func wrongPSK() throws {
        var other = NoisePair.psk
        other[31] ^= 1
        var pair = try NoisePair(initiatorPSK: NoisePair.psk, responderPSK: other)
        let m1 = try pair.initiator.writeMessage(payload: [])
        _ = try pair.responder.readMessage(m1)
        _ = try pair.initiator.readMessage(pair.responder.writeMessage(payload: []))
        let m3 = try pair.initiator.writeMessage(payload: Array("secret".utf8))
        #expect(throws: NoiseError.decryptionFailed) { try pair.responder.readMessage(m3) }
        #expect(!pair.responder.isComplete)
        #expect(pair.responder.remoteStatic == nil)
        #expect(pair.responder.handshakeHash.isEmpty)
        #expect(throws: NoiseError.unusable) { try pair.responder.readMessage(m3) }
        #expect(throws: NoiseError.unusable) { try pair.responder.writeMessage(payload: []) }
        #expect(throws: NoiseError.unusable) { try pair.responder.split() }
        // The initiator cannot tell yet (XXpsk3 puts the psk last), but its transport is keyed
        // differently: nothing it sends can be read by the other side, and vice versa.
        #expect(pair.initiator.isComplete)
    }

    @Test("different prologues fail at the first decryption (message 2 at the initiator)")
    func prologueMismatch() throws {
        var pair = try NoisePair(initiatorPrologue: Array("a".utf8), responderPrologue: Array("b".utf8))
        #expect(throws: NoiseError.decryptionFailed) { try pair.run() }
    }

    @Test("any modified byte in any handshake message fails the reader", arguments: 0..<3)
    func tampered(index: Int) throws {
        let lengths = [48, 96, 64]
        for position in [0, 16, 31, 32, 47, lengths[index] - 1] where position < lengths[index] {
            var pair = try NoisePair()
            #expect(throws: NoiseError.decryptionFailed) {
                try pair.run { i, m in
                    guard i == index else { return m }
                    var m = m
                    m[position] ^= 0x01
                    return m
                }
            }
        }
    }

    @Test("short, truncated and overlong messages are refused by length")
    func lengths() throws {
        var a = try NoisePair()
        #expect(throws: NoiseError.messageTooShort(length: 47)) { try a.run { i, m in i == 0 ? Array(m.dropLast()) : m } }
        var b = try NoisePair()
        #expect(throws: NoiseError.messageTooShort(length: 0)) { try b.run { i, m in i == 1 ? [] : m } }
        var c = try NoisePair()
        #expect(throws: NoiseError.messageTooLong(length: 65536)) { try c.run { i, m in i == 2 ? m + [UInt8](repeating: 0, count: 65536 - m.count) : m } }
        // Extra bytes are not ignored: they become part of the payload ciphertext and break the tag.
        var d = try NoisePair()
        #expect(throws: NoiseError.decryptionFailed) { try d.run { i, m in i == 0 ? m + [0] : m } }
    }

    @Test("payloads up to the 65535-byte message limit, not beyond")
    func payloadLimit() throws {
        var pair = try NoisePair()
        let largest = [UInt8](repeating: 7, count: 65535 - 48)
        let m1 = try pair.initiator.writeMessage(payload: largest)
        #expect(m1.count == 65535)
        #expect(try pair.responder.readMessage(m1) == largest)
        var other = try NoisePair()
        #expect(throws: NoiseError.messageTooLong(length: 65536)) { try other.initiator.writeMessage(payload: largest + [0]) }
        #expect(throws: NoiseError.unusable) { try other.initiator.writeMessage(payload: []) }
    }

    @Test("calls out of order fail and end the handshake")
    func outOfOrder() throws {
        var pair = try NoisePair()
        #expect(throws: NoiseError.outOfOrder) { try pair.responder.writeMessage(payload: []) }
        #expect(throws: NoiseError.unusable) { try pair.responder.readMessage([UInt8](repeating: 0, count: 48)) }
        #expect(throws: NoiseError.outOfOrder) { try pair.initiator.readMessage([UInt8](repeating: 0, count: 96)) }

        var fresh = try NoisePair()
        let m1 = try fresh.initiator.writeMessage(payload: [])
        #expect(throws: NoiseError.outOfOrder) { try fresh.initiator.writeMessage(payload: []) }
        #expect(throws: NoiseError.handshakeIncomplete) { try fresh.responder.split() }
        _ = m1

        var done = try NoisePair()
        _ = try done.run()
        #expect(throws: NoiseError.outOfOrder) { try done.initiator.writeMessage(payload: []) }
        #expect(throws: NoiseError.outOfOrder) { try done.responder.readMessage([UInt8](repeating: 0, count: 64)) }
    }

    @Test("a pre-shared key must be 32 bytes")
    func pskLength() {
        #expect(throws: NoiseError.invalidPreSharedKey(length: 31)) {
            try NoiseHandshake(role: .initiator, localStatic: X25519PrivateKey(), psk: [UInt8](repeating: 0, count: 31), prologue: [])
        }
    }

    @Test("a low-order ephemeral from the peer is refused")
    func lowOrderEphemeral() throws {
        var pair = try NoisePair()
        _ = try pair.responder.readMessage(pair.initiator.writeMessage(payload: []))
        var m2 = try pair.responder.writeMessage(payload: [])
        m2.replaceSubrange(0..<32, with: [UInt8](repeating: 0, count: 32))
        #expect(throws: NoiseError.invalidRemoteKey) { try pair.initiator.readMessage(m2) }
    }
}
