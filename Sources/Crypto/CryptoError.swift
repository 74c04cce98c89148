/// Errors from key handling. Verification failures are not errors: `verify` returns `false`.
public enum CryptoError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A key, seed or signature had the wrong number of bytes.
    case wrongLength(what: String, expected: Int, got: Int)
    /// libsodium refused an operation (for example a public key that is not a valid point).
    case operationFailed(String)

    public var description: String {
        switch self {
        case let .wrongLength(what, expected, got):
            return "\(what) must be \(expected) bytes, got \(got)"
        case let .operationFailed(what):
            return "cryptographic operation failed: \(what)"
        }
    }
}
