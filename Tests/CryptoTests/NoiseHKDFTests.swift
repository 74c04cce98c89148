import Crypto
import Testing

/// Expected values computed with Python's standard library:
/// `hmac.new(key, msg, hashlib.blake2b)` (BLAKE2b-512, 128-byte block), and Noise's HKDF written
/// out on top of it.
@Suite("HMAC-BLAKE2b and Noise HKDF")
struct NoiseHKDFTests {
    static let message = Array("The quick brown fox jumps over the lazy dog".utf8)

    @Test("HMAC-BLAKE2b with a short key")
    func shortKey() {
        #expect(Hex.encode(HMACBLAKE2b.authenticate(key: Array("key".utf8), message: Self.message))
            == "92294f92c0dfb9b00ec9ae8bd94d7e7d8a036b885a499f149dfe2fd2199394aaaf6b8894a1730cccb2cd050f9bcf5062a38b51b0dab33207f8ef35ae2c9df51b")
    }

    @Test("HMAC-BLAKE2b with a key longer than the 128-byte block (hashed first)")
    func longKey() {
        let key = (0..<200).map { UInt8($0) }
        #expect(Hex.encode(HMACBLAKE2b.authenticate(key: key, message: Self.message))
            == "7b6d593626fdbf17325c34e2e415d85c4fe0bfa9264d3e6037b146acdd2544b0bec787e5a214533833c0e0f8386f6f3a46a1566cac5917652e8a0ad0b1bd8e99")
    }

    @Test("HMAC-BLAKE2b with empty key and message")
    func empty() {
        #expect(Hex.encode(HMACBLAKE2b.authenticate(key: [], message: []))
            == "198cd2006f66ff83fbbd913f78aca2251caf4f19fe9475aade8cf2091b99a68466775177424f58286886cbae8229644cec747237d4b721735485e17372fdf59c")
    }

    @Test("SecretBytes key gives the same MAC")
    func secretKey() {
        let key = SecretBytes(Array("key".utf8))
        #expect(HMACBLAKE2b.authenticate(key: key, message: Self.message).copyBytes()
            == HMACBLAKE2b.authenticate(key: Array("key".utf8), message: Self.message))
    }

    @Test("HKDF with 2 and 3 outputs")
    func hkdf() {
        let ck = SecretBytes((0..<64).map { UInt8($0) })
        let ikm = (100..<132).map { UInt8($0) }
        let expected = [
            "2262ed5f40c3324574d00a1e0849a7cc67fb5b6a80211c3c59404bb8e47512b1cb95e73840718c5d68ca345f934f39a52f1f31e8f6d3ed521f0664f46feddae4",
            "f6a6559fa2aaab64d3d2666b83fe3f4fed6fae1959537fedd6a39b6f8d411e6132593234cc2a750244335da5021c27bf7eacbb65cfa608457de6ecc144b90077",
            "07c82c1301c70e885f4662f1f3f7b7bb9e04d81c94a6e1882f812c02ffb69580c93095bb599ad2fced3d3cf38c9c17df4fb3c0029f231247fca69b040e16449e",
        ]
        let three = NoiseHKDF.derive(chainingKey: ck, inputKeyMaterial: ikm, outputs: 3).map { Hex.encode($0.copyBytes()) }
        #expect(three == expected)
        let two = NoiseHKDF.derive(chainingKey: ck, inputKeyMaterial: SecretBytes(ikm), outputs: 2).map { Hex.encode($0.copyBytes()) }
        #expect(two == Array(expected.prefix(2)))
    }
}
