import Crypto

/// Noise's SymmetricState (§5.2) for BLAKE2b: the chaining key `ck` (all keys derive from it) and
/// the handshake hash `h` (a transcript every encryption authenticates as associated data).
struct NoiseSymmetricState: Sendable {
    /// BLAKE2b's HASHLEN.
    static let hashLength = 64

    private(set) var cipher = NoiseCipherState()
    private var chainingKey: SecretBytes
    private(set) var hash: [UInt8]

    /// InitializeSymmetric: a name of at most HASHLEN bytes is zero-padded, a longer one hashed.
    init(protocolName: [UInt8]) {
        if protocolName.count <= Self.hashLength {
            hash = protocolName + [UInt8](repeating: 0, count: Self.hashLength - protocolName.count)
        } else {
            hash = BLAKE2b.hash(protocolName, length: Self.hashLength)
        }
        chainingKey = SecretBytes(hash)
    }

    var hasKey: Bool { cipher.hasKey }

    mutating func mixHash(_ data: [UInt8]) {
        hash = BLAKE2b.hash(hash + data, length: Self.hashLength)
    }

    /// MixKey with a secret input (DH results).
    mutating func mixKey(_ input: SecretBytes) {
        let out = NoiseHKDF.derive(chainingKey: chainingKey, inputKeyMaterial: input, outputs: 2)
        chainingKey = out[0]
        cipher = NoiseCipherState(key: Self.cipherKey(out[1]))
    }

    /// MixKey with a public input: the psk modifier mixes each ephemeral public key into the key,
    /// so that nothing is ever encrypted under a key independent of fresh randomness.
    mutating func mixKey(_ input: [UInt8]) {
        let out = NoiseHKDF.derive(chainingKey: chainingKey, inputKeyMaterial: input, outputs: 2)
        chainingKey = out[0]
        cipher = NoiseCipherState(key: Self.cipherKey(out[1]))
    }

    /// MixKeyAndHash, for the `psk` token: the PSK feeds the key and, through `h`, every later
    /// associated data, so a wrong PSK makes the next decryption fail.
    mutating func mixKeyAndHash(_ input: SecretBytes) {
        let out = NoiseHKDF.derive(chainingKey: chainingKey, inputKeyMaterial: input, outputs: 3)
        chainingKey = out[0]
        mixHash(out[1].copyBytes())
        cipher = NoiseCipherState(key: Self.cipherKey(out[2]))
    }

    mutating func encryptAndHash(_ plaintext: [UInt8]) throws(NoiseError) -> [UInt8] {
        let ciphertext = try cipher.encrypt(ad: hash, plaintext: plaintext)
        mixHash(ciphertext)
        return ciphertext
    }

    mutating func decryptAndHash(_ ciphertext: [UInt8]) throws(NoiseError) -> [UInt8] {
        let plaintext = try cipher.decrypt(ad: hash, ciphertext: ciphertext)
        mixHash(ciphertext)
        return plaintext
    }

    /// Split: the two transport keys, initiator-to-responder first.
    func split() -> (NoiseCipherState, NoiseCipherState) {
        let out = NoiseHKDF.derive(chainingKey: chainingKey, inputKeyMaterial: [UInt8](), outputs: 2)
        return (NoiseCipherState(key: Self.cipherKey(out[0])), NoiseCipherState(key: Self.cipherKey(out[1])))
    }

    /// HKDF yields HASHLEN (64) bytes; ChaChaPoly keys are the first 32 (§4.3 "truncates").
    private static func cipherKey(_ output: SecretBytes) -> SecretBytes {
        output.withUnsafeBytes { SecretBytes($0[0..<ChaChaPoly.keyByteCount]) }
    }
}
