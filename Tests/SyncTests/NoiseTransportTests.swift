import Crypto
@testable import Sync
import Testing

@Suite("Noise transport")
struct NoiseTransportTests {
    private func transports() throws -> (NoiseTransport, NoiseTransport) {
        var pair = try NoisePair()
        _ = try pair.run()
        return (try pair.initiator.split(), try pair.responder.split())
    }

    @Test("a tampered transport message fails and the transport stays dead")
    func tampered() throws {
        var (a, b) = try transports()
        var sealed = try a.encrypt(Array("hi".utf8))
        sealed[0] ^= 1
        #expect(throws: NoiseError.decryptionFailed) { try b.decrypt(sealed) }
        sealed[0] ^= 1
        #expect(throws: NoiseError.unusable) { try b.decrypt(sealed) }
        #expect(throws: NoiseError.unusable) { try b.encrypt([]) }
    }

    @Test("a replayed or reordered message fails")
    func replay() throws {
        var (a, b) = try transports()
        let first = try a.encrypt([1])
        let second = try a.encrypt([2])
        #expect(throws: NoiseError.decryptionFailed) { try b.decrypt(second) }
        var (c, d) = try transports()
        let once = try c.encrypt([1])
        #expect(try d.decrypt(once) == [1])
        #expect(throws: NoiseError.decryptionFailed) { try d.decrypt(once) }
        _ = first
    }

    @Test("a message sent by one direction cannot be read back by its sender")
    func directions() throws {
        var (a, _) = try transports()
        let sealed = try a.encrypt([1, 2, 3])
        #expect(throws: NoiseError.decryptionFailed) { try a.decrypt(sealed) }
    }

    @Test("plaintexts up to 65519 bytes; a longer one is refused without harm")
    func limits() throws {
        var (a, b) = try transports()
        #expect(throws: NoiseError.messageTooLong(length: 65536)) { try a.encrypt([UInt8](repeating: 0, count: 65520)) }
        let big = [UInt8](repeating: 9, count: 65519)
        let sealed = try a.encrypt(big)
        #expect(sealed.count == 65535)
        #expect(try b.decrypt(sealed) == big)
        #expect(throws: NoiseError.messageTooShort(length: 15)) { try b.decrypt([UInt8](repeating: 0, count: 15)) }
    }

    @Test("nonce 2^64-1 is reserved: encryption and decryption stop before it")
    func nonceExhaustion() throws {
        let key = SecretBytes([UInt8](repeating: 5, count: 32))
        var sender = NoiseCipherState(key: key, nonce: .max - 1)
        var receiver = NoiseCipherState(key: key, nonce: .max - 1)
        let last = try sender.encrypt(ad: [], plaintext: [1])
        #expect(try receiver.decrypt(ad: [], ciphertext: last) == [1])
        #expect(throws: NoiseError.nonceExhausted) { try sender.encrypt(ad: [], plaintext: [1]) }
        #expect(throws: NoiseError.nonceExhausted) { try receiver.decrypt(ad: [], ciphertext: last) }
    }
}
