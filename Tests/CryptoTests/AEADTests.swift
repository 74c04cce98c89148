import Crypto
import Testing

@Suite("ChaCha20-Poly1305")
struct AEADTests {
    static let key = Array(UInt8(0x80)...UInt8(0x9f))

    /// RFC 8439 §2.8.2. Its nonce starts 07 00 00 00, not Noise's four zero bytes, so it goes
    /// through the raw-nonce entry points.
    @Test("RFC 8439 §2.8.2 AEAD vector")
    func rfc8439() throws {
        let plaintext = Array("Ladies and Gentlemen of the class of '99: If I could offer you only one tip for the future, sunscreen would be it.".utf8)
        let nonce = Hex.decode("070000004041424344454647")!
        let ad = Hex.decode("50515253c0c1c2c3c4c5c6c7")!
        let expected = """
            d31a8d34648e60db7b86afbc53ef7ec2a4aded51296e08fea9e2b5a736ee62d63dbea45e8ca9671282fafb69da92728b\
            1a71de0a9e060b2905d6a5b67ecd3b3692ddbd7f2d778b8c9803aee328091b58fab324e4fad675945585808b4831d7bc\
            3ff4def08e4b7a9de576d26586cec64b6116
            """ + "1ae10b594f09e26a7e902ecbd0600691"
        let sealed = ChaChaPoly.seal(key: Self.key, ietfNonce: nonce, ad: ad, plaintext: plaintext)
        #expect(Hex.encode(sealed) == expected)
        #expect(try ChaChaPoly.open(key: Self.key, ietfNonce: nonce, ad: ad, ciphertext: sealed) == plaintext)
    }

    /// Noise's nonce is 4 zero bytes then the counter little-endian; the expected value came from
    /// Python's `cryptography` with nonce 00000000 0807060504030201.
    @Test("Noise nonce layout")
    func noiseNonce() throws {
        let sealed = ChaChaPoly.seal(key: Self.key, nonce: 0x0102030405060708, ad: Array("ad".utf8), plaintext: Array("noise".utf8))
        #expect(Hex.encode(sealed) == "9ade87c8359653885e668cd8673b7502d7291f0c76")
        let viaRaw = ChaChaPoly.seal(key: Self.key, ietfNonce: Hex.decode("000000000807060504030201")!,
                                     ad: Array("ad".utf8), plaintext: Array("noise".utf8))
        #expect(sealed == viaRaw)
    }

    @Test("SecretBytes and array keys agree; empty plaintext gives a bare tag")
    func keyForms() throws {
        let secret = SecretBytes(Self.key)
        let a = ChaChaPoly.seal(key: secret, nonce: 7, ad: [], plaintext: [])
        #expect(a.count == ChaChaPoly.tagByteCount)
        #expect(a == ChaChaPoly.seal(key: Self.key, nonce: 7, ad: [], plaintext: []))
        #expect(try ChaChaPoly.open(key: secret, nonce: 7, ad: [], ciphertext: a) == [])
    }

    @Test("sealing in place and opening into a buffer agree with seal and open", arguments: [0, 1, 63, 65519])
    func inPlace(length: Int) throws {
        let secret = SecretBytes(Self.key)
        let plaintext = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        var buffer = plaintext + [UInt8](repeating: 0, count: ChaChaPoly.tagByteCount)
        buffer.withUnsafeMutableBytes { ChaChaPoly.sealInPlace(key: secret, nonce: 0x0102030405060708, $0) }
        #expect(buffer == ChaChaPoly.seal(key: secret, nonce: 0x0102030405060708, ad: [], plaintext: plaintext))
        var opened = [UInt8](repeating: 0, count: length)
        let ok = buffer.withUnsafeBytes { c in opened.withUnsafeMutableBytes { ChaChaPoly.open(key: secret, nonce: 0x0102030405060708, ciphertext: c, into: $0) } }
        #expect(ok && opened == plaintext)
        buffer[0] ^= 1
        let forged = buffer.withUnsafeBytes { c in opened.withUnsafeMutableBytes { ChaChaPoly.open(key: secret, nonce: 0x0102030405060708, ciphertext: c, into: $0) } }
        #expect(!forged)
    }

    @Test("a changed ciphertext, tag, nonce, ad or key is rejected")
    func rejects() {
        let sealed = ChaChaPoly.seal(key: Self.key, nonce: 1, ad: [1, 2], plaintext: Array("hello".utf8))
        var flipped = sealed
        flipped[0] ^= 1
        var badTag = sealed
        badTag[badTag.count - 1] ^= 0x80
        var otherKey = Self.key
        otherKey[0] ^= 1
        #expect(throws: CryptoError.self) { try ChaChaPoly.open(key: Self.key, nonce: 1, ad: [1, 2], ciphertext: flipped) }
        #expect(throws: CryptoError.self) { try ChaChaPoly.open(key: Self.key, nonce: 1, ad: [1, 2], ciphertext: badTag) }
        #expect(throws: CryptoError.self) { try ChaChaPoly.open(key: Self.key, nonce: 2, ad: [1, 2], ciphertext: sealed) }
        #expect(throws: CryptoError.self) { try ChaChaPoly.open(key: Self.key, nonce: 1, ad: [1], ciphertext: sealed) }
        #expect(throws: CryptoError.self) { try ChaChaPoly.open(key: otherKey, nonce: 1, ad: [1, 2], ciphertext: sealed) }
        #expect(throws: CryptoError.self) { try ChaChaPoly.open(key: Self.key, nonce: 1, ad: [1, 2], ciphertext: Array(sealed.prefix(15))) }
    }
}
