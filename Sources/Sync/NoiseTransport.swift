import Crypto

/// The two cipher states a completed handshake yields: one per direction, each with its own
/// counter. Messages must be delivered in order and exactly once (a reliable stream), since the
/// counters are implicit.
public struct NoiseTransport: Sendable {
    /// Noise's limit on a transport message, tag included.
    public static let maxMessageLength = NoiseHandshake.maxMessageLength
    public static let maxPlaintextLength = maxMessageLength - ChaChaPoly.tagByteCount

    private var sender: NoiseCipherState
    private var receiver: NoiseCipherState
    private var failed = false
    /// The handshake transcript hash, for channel binding.
    public let handshakeHash: [UInt8]
    /// The peer's static key, authenticated by the completed handshake.
    public let remoteStatic: X25519PublicKey

    init(sender: NoiseCipherState, receiver: NoiseCipherState, handshakeHash: [UInt8], remoteStatic: X25519PublicKey) {
        self.sender = sender
        self.receiver = receiver
        self.handshakeHash = handshakeHash
        self.remoteStatic = remoteStatic
    }

    /// Encrypts the next outgoing message. A too-long plaintext is refused without touching the
    /// state (nothing was sent, so the session is intact).
    public mutating func encrypt(_ plaintext: [UInt8]) throws(NoiseError) -> [UInt8] {
        guard !failed else { throw .unusable }
        guard plaintext.count <= Self.maxPlaintextLength else {
            throw .messageTooLong(length: plaintext.count + ChaChaPoly.tagByteCount)
        }
        do {
            return try sender.encrypt(ad: [], plaintext: plaintext)
        } catch {
            failed = true  // only nonce exhaustion: the session is over
            throw error
        }
    }

    /// Encrypts the next outgoing message in place: `buffer` holds at most `maxPlaintextLength`
    /// bytes of plaintext followed by `ChaChaPoly.tagByteCount` bytes of room for the tag.
    public mutating func encryptInPlace(_ buffer: UnsafeMutableRawBufferPointer) throws(NoiseError) {
        guard !failed else { throw .unusable }
        guard buffer.count >= ChaChaPoly.tagByteCount else { throw .messageTooShort(length: buffer.count) }
        guard buffer.count <= Self.maxMessageLength else { throw .messageTooLong(length: buffer.count) }
        do {
            try sender.encryptInPlace(buffer)
        } catch {
            failed = true  // only nonce exhaustion: the session is over
            throw error
        }
    }

    /// Decrypts the next incoming message into `plaintext`, which holds exactly
    /// `ciphertext.count - ChaChaPoly.tagByteCount` bytes; fails like `decrypt`.
    public mutating func decrypt(_ ciphertext: UnsafeRawBufferPointer, into plaintext: UnsafeMutableRawBufferPointer) throws(NoiseError) {
        guard !failed else { throw .unusable }
        do throws(NoiseError) {
            guard ciphertext.count <= Self.maxMessageLength else { throw .messageTooLong(length: ciphertext.count) }
            guard ciphertext.count >= ChaChaPoly.tagByteCount else { throw .messageTooShort(length: ciphertext.count) }
            try receiver.decrypt(ciphertext, into: plaintext)
        } catch {
            failed = true
            throw error
        }
    }

    /// Decrypts the next incoming message. Any failure kills the transport: on an ordered stream
    /// a forged, truncated or replayed frame means the stream is under attack or out of sync, and
    /// Noise offers no way to resynchronise.
    public mutating func decrypt(_ ciphertext: [UInt8]) throws(NoiseError) -> [UInt8] {
        guard !failed else { throw .unusable }
        do throws(NoiseError) {
            guard ciphertext.count <= Self.maxMessageLength else { throw .messageTooLong(length: ciphertext.count) }
            guard ciphertext.count >= ChaChaPoly.tagByteCount else { throw .messageTooShort(length: ciphertext.count) }
            return try receiver.decrypt(ad: [], ciphertext: ciphertext)
        } catch {
            failed = true
            throw error
        }
    }
}
