import Crypto
import Foundation
import Testing

@Suite("Ed25519")
struct Ed25519Tests {
    /// RFC 8032 §7.1, tests 1-3: seed, public key, message, signature.
    static let vectors: [(String, String, String, String)] = [
        ("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60",
         "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a", "",
         "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"),
        ("4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb",
         "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c", "72",
         "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00"),
        ("c5aa8df43f9f837bedb7442f31dcb7b166d38535076f094b85ce3a2e0b4458f7",
         "fc51cd8e6218a1a38da47ed00230f0580816ed13ba3303ac5deb911548908025", "af82",
         "6291d657deec24024827e69c3abe01a30ce548a284743a445e3680d7db5ac3ac18ff9b538d16f290ae67f760984dc6594a7c15e9716ed28dc027beceea1ec40a"),
    ]

    @Test("RFC 8032 test vectors", arguments: 0..<3)
    func rfc8032(index: Int) throws {
        let (seed, publicKey, message, signature) = Self.vectors[index]
        let key = try PrivateKey(seedBytes: Hex.decode(seed)!)
        #expect(Hex.encode(key.publicKey.bytes) == publicKey)
        let sig = try key.sign(Hex.decode(message)!)
        #expect(Hex.encode(sig.bytes) == signature)
        #expect(key.publicKey.verify(sig, for: Hex.decode(message)!))
    }

    @Test("a changed message, key or signature does not verify")
    func rejects() throws {
        let key = PrivateKey()
        let other = PrivateKey()
        let message = Array("hello".utf8)
        let sig = try key.sign(message)
        #expect(key.publicKey.verify(sig, for: message))
        #expect(!key.publicKey.verify(sig, for: Array("hellp".utf8)))
        #expect(!other.publicKey.verify(sig, for: message))
        var flipped = sig.bytes
        flipped[10] ^= 1
        #expect(!key.publicKey.verify(try Signature(bytes: flipped), for: message))
    }

    @Test("sizes are checked at construction")
    func sizes() {
        #expect(throws: CryptoError.self) { try PublicKey(bytes: [UInt8](repeating: 0, count: 31)) }
        #expect(throws: CryptoError.self) { try Signature(bytes: [UInt8](repeating: 0, count: 65)) }
        #expect(throws: CryptoError.self) { try PrivateKey(seedBytes: [UInt8](repeating: 0, count: 33)) }
    }

    @Test("user ids are 43-character base64url and round-trip")
    func userIDs() throws {
        let key = PrivateKey()
        let id = key.publicKey.userID
        #expect(id.count == 43)
        #expect(!id.contains("=") && !id.contains("/") && !id.contains("+"))
        #expect(try PublicKey(userID: id) == key.publicKey)
        #expect(throws: CryptoError.self) { try PublicKey(userID: "not a key") }
    }

    @Test("the seed round-trips through SecretBytes")
    func seedRoundTrip() throws {
        let key = PrivateKey()
        let again = try PrivateKey(seed: key.seed())
        #expect(again.publicKey == key.publicKey)
    }
}

@Suite("BLAKE2b and encodings")
struct HashTests {
    @Test("RFC 7693 and known digests")
    func vectors() {
        #expect(Hex.encode(BLAKE2b.hash(Array("abc".utf8), length: 64)) ==
            "ba80a53f981c4d0d6a2797b69f12f6e94c212f14685ac4b74b12bb6fdbffa2d17d87c5392aab792dc252d5de4533cc9518d38aa8dbf1925ab92386edd4009923")
        #expect(BLAKE2b.digest256([]).description == "0e5751c026e543b2e8ab2eb06099daa1d1e5df47778f7787faab45cdf12fe3a8")
    }

    @Test("incremental hashing equals one-shot hashing")
    func incremental() {
        let data = (0..<1000).map { UInt8($0 % 251) }
        var hasher = BLAKE2b.Hasher()
        hasher.update(data[0..<333])
        hasher.update(data[333...])
        #expect(hasher.finalize() == BLAKE2b.hash(data))
    }

    @Test("base64url is strict and round-trips every length")
    func base64url() {
        for n in 0..<40 {
            let bytes = (0..<n).map { UInt8(($0 * 37 + n) % 256) }
            #expect(Base64URL.decode(Base64URL.encode(bytes)) == bytes)
            // The same text as Foundation's base64 in the URL alphabet, without padding.
            let expected = Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
                .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
            #expect(Base64URL.encode(bytes) == expected)
        }
        #expect(Base64URL.decode("AB==") == nil)
        #expect(Base64URL.decode("AB") == nil)  // non-zero unused bits
        #expect(Base64URL.decode("AA") == [0])
        #expect(Hex.decode("0g") == nil && Hex.decode("abc") == nil)
    }

    @Test("constant-time comparison")
    func compare() {
        #expect(constantTimeEqual([1, 2, 3], [1, 2, 3]))
        #expect(!constantTimeEqual([1, 2, 3], [1, 2, 4]))
        #expect(!constantTimeEqual([1, 2], [1, 2, 3]))
    }
}
