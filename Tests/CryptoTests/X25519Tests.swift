import Crypto
import Testing

@Suite("X25519")
struct X25519Tests {
    private func hex(_ s: String) -> [UInt8] { Hex.decode(s)! }

    private func x25519(_ scalar: [UInt8], _ u: [UInt8]) throws -> [UInt8] {
        try X25519PrivateKey(bytes: scalar).sharedSecret(with: X25519PublicKey(bytes: u)).copyBytes()
    }

    @Test("RFC 7748 §5.2: scalar times u-coordinate")
    func scalarMultiplication() throws {
        let out = try x25519(hex("a546e36bf0527c9d3b16154b82465edd62144c0ac1fc5a18506a2244ba449ac4"),
                             hex("e6db6867583030db3594c1a424b15f7c726624ec26b3353b10a903a6d0ab1c4c"))
        #expect(Hex.encode(out) == "c3da55379de9c6908e94ea4df28d084f32eccf03491c71f754b4075577a28552")
    }

    @Test("RFC 7748 §5.2: iterated 1 and 1000 times")
    func iterated() throws {
        var k = [9] + [UInt8](repeating: 0, count: 31)
        var u = k
        for i in 1...1000 {
            (k, u) = (try x25519(k, u), k)
            if i == 1 { #expect(Hex.encode(k) == "422c8e7a6227d7bca1350b3e2bb7279f7897b87bb6854b783c60e80311ae3079") }
        }
        #expect(Hex.encode(k) == "684cf59ba83309552800ef566f2f4d3c1c3887c49360e3875f2eb94d99532c51")
    }

    @Test("RFC 7748 §6.1: Diffie-Hellman")
    func diffieHellman() throws {
        let alice = try X25519PrivateKey(bytes: hex("77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a"))
        let bob = try X25519PrivateKey(bytes: hex("5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb"))
        #expect(Hex.encode(alice.publicKey.bytes) == "8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a")
        #expect(Hex.encode(bob.publicKey.bytes) == "de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f")
        let shared = "4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742"
        #expect(Hex.encode(try alice.sharedSecret(with: bob.publicKey).copyBytes()) == shared)
        #expect(Hex.encode(try bob.sharedSecret(with: alice.publicKey).copyBytes()) == shared)
    }

    @Test("random keys agree, and differ from each other")
    func randomKeys() throws {
        let a = X25519PrivateKey(), b = X25519PrivateKey()
        #expect(a.publicKey != b.publicKey)
        #expect(try a.sharedSecret(with: b.publicKey).copyBytes() == b.sharedSecret(with: a.publicKey).copyBytes())
    }

    @Test("low-order points give an all-zero secret, which is refused")
    func lowOrder() throws {
        let key = X25519PrivateKey()
        for u in [[UInt8](repeating: 0, count: 32), [1] + [UInt8](repeating: 0, count: 31)] {
            #expect(throws: CryptoError.self) { try key.sharedSecret(with: X25519PublicKey(bytes: u)) }
        }
    }

    @Test("wrong lengths are refused")
    func lengths() {
        #expect(throws: CryptoError.wrongLength(what: "X25519 public key", expected: 32, got: 31)) {
            try X25519PublicKey(bytes: [UInt8](repeating: 1, count: 31))
        }
        #expect(throws: CryptoError.self) { try X25519PrivateKey(bytes: [UInt8](repeating: 1, count: 33)) }
    }

    @Test("Ed25519 identity to X25519 matches an independent computation")
    func fromEd25519() throws {
        // RFC 8032 test 1 key. Expected values computed in Python independently of libsodium:
        // the scalar is clamp(SHA-512(seed)[0..<32]), the public key u = (1+y)/(1-y) mod p.
        let identity = try PrivateKey(seedBytes: hex("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60"))
        let secret = identity.x25519()
        #expect(Hex.encode(secret.secretBytes().copyBytes()) == "307c83864f2833cb427a2ef1c00a013cfdff2768d980c0a3a520f006904de94f")
        let expectedPublic = "d85e07ec22b0ad881537c2f44d662d1a143cf830c57aca4305d85c7a90f6b62e"
        #expect(Hex.encode(secret.publicKey.bytes) == expectedPublic)
        #expect(Hex.encode(try identity.publicKey.x25519().bytes) == expectedPublic)
    }

    @Test("a small-order Ed25519 key has no X25519 form")
    func invalidEd25519() throws {
        // y = 1 encodes the identity point, which libsodium refuses as small-order.
        let bad = try PublicKey(bytes: [1] + [UInt8](repeating: 0, count: 31))
        #expect(throws: CryptoError.self) { try bad.x25519() }
    }
}
