/// Why a Noise handshake or transport operation was refused. After any handshake error, and after
/// any error about a received transport message, the state is dead: every later call throws
/// `.unusable`, because a half-failed key exchange or a forged frame cannot be recovered from safely.
public enum NoiseError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The pre-shared key (network key) is not 32 bytes, as Noise requires for `psk` tokens.
    case invalidPreSharedKey(length: Int)
    /// A write was attempted when a read was due, or the reverse, or any handshake message after
    /// the last one: the peers disagree about the handshake's progress.
    case outOfOrder
    /// `split()` was asked for before all three handshake messages were processed.
    case handshakeIncomplete
    /// A message (or the message a payload would produce) exceeds Noise's 65535-byte limit.
    case messageTooLong(length: Int)
    /// A received message is shorter than the keys and tags its position requires.
    case messageTooShort(length: Int)
    /// Authentication failed: a wrong pre-shared key, a different prologue, or a modified message.
    case decryptionFailed
    /// The peer's public key gave an all-zero Diffie-Hellman result (a low-order point).
    case invalidRemoteKey
    /// The 64-bit message counter reached 2^64-1, which Noise reserves; the session must end.
    case nonceExhausted
    /// An earlier error (or `split()`) ended this state; it holds no keys any more.
    case unusable

    public var description: String {
        switch self {
        case let .invalidPreSharedKey(length): return "Noise pre-shared key must be 32 bytes, got \(length)"
        case .outOfOrder: return "Noise handshake message out of order"
        case .handshakeIncomplete: return "Noise handshake not complete"
        case let .messageTooLong(length): return "Noise message of \(length) bytes exceeds 65535"
        case let .messageTooShort(length): return "Noise message of \(length) bytes is too short"
        case .decryptionFailed: return "Noise decryption failed (wrong network key, prologue or a modified message)"
        case .invalidRemoteKey: return "Noise peer sent an invalid public key"
        case .nonceExhausted: return "Noise nonce exhausted"
        case .unusable: return "Noise state unusable after an earlier error"
        }
    }
}
