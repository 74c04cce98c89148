import Crypto

/// SHA-256, the hash Negentropy's fingerprint is defined with.
///
/// One seam for the fingerprint code: here it forwards to the Crypto layer's libsodium-backed
/// SHA-256, so Sync needs no direct dependency on the C library.
enum NegentropySHA256 {
    static func hash(_ input: [UInt8]) -> [UInt8] {
        Crypto.SHA256.hash(input)
    }
}
