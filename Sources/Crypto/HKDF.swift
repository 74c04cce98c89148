internal import CSodium

/// Noise's HKDF (§4.3) over HMAC-BLAKE2b: the key schedule that turns the chaining key and each
/// new input (DH outputs, the PSK) into the next chaining key and cipher keys. It amounts to
/// RFC 5869 with the chaining key as salt and no info, but Noise specifies it directly, so it is
/// written from that definition.
public enum NoiseHKDF {
    /// Returns `outputs` (2 or 3) values of 64 bytes each:
    /// temp_key = HMAC(chainingKey, ikm); output1 = HMAC(temp_key, 0x01);
    /// output_i = HMAC(temp_key, output_(i-1) || i).
    public static func derive(chainingKey: SecretBytes, inputKeyMaterial: SecretBytes, outputs: Int) -> [SecretBytes] {
        var ikm = inputKeyMaterial.copyBytes()
        defer { sodium_memzero(&ikm, ikm.count) }
        return derive(chainingKey: chainingKey, ikm: ikm, outputs: outputs)
    }

    /// `derive` with public input key material (the empty input of `Split`, test vectors).
    public static func derive(chainingKey: SecretBytes, inputKeyMaterial: [UInt8], outputs: Int) -> [SecretBytes] {
        derive(chainingKey: chainingKey, ikm: inputKeyMaterial, outputs: outputs)
    }

    private static func derive(chainingKey: SecretBytes, ikm: [UInt8], outputs: Int) -> [SecretBytes] {
        precondition((2...3).contains(outputs), "Noise HKDF yields 2 or 3 outputs")
        let tempKey = HMACBLAKE2b.authenticate(key: chainingKey, parts: [ikm])
        var results: [SecretBytes] = []
        var previous: [UInt8] = []
        defer { sodium_memzero(&previous, previous.count) }
        for i in 1...outputs {
            let next = HMACBLAKE2b.authenticate(key: tempKey, parts: [previous, [UInt8(i)]])
            results.append(next)
            sodium_memzero(&previous, previous.count)
            previous = next.copyBytes()
        }
        return results
    }
}
