import Crypto

/// The Noise_XXpsk3_25519_ChaChaPoly_BLAKE2b handshake (Noise rev 34), sans-IO: it turns payloads
/// into handshake messages and back, and leaves framing and sockets to the caller.
///
///     -> e
///     <- e, ee, s, es
///     -> s, se, psk
///
/// XX because peers on a LAN learn each other's identity during the handshake; the psk (the
/// network key) in the last message admits only members of the network. Note what psk3 does
/// *not* hide: both static public keys travel before the psk is mixed in, so an active peer
/// without the network key can learn them; it cannot complete a session.
///
/// Strict by design: any error (out-of-order call, bad length, failed decryption, bad key)
/// wipes the state and every later call throws `.unusable`.
public struct NoiseHandshake: Sendable {
    public enum Role: Sendable {
        case initiator, responder
    }

    public static let protocolName = "Noise_XXpsk3_25519_ChaChaPoly_BLAKE2b"
    /// Noise's limit on any message, handshake or transport (§3).
    public static let maxMessageLength = 65535
    public static let preSharedKeyLength = 32

    private enum Token {
        case e, s, ee, es, se, psk
    }

    /// XX's message patterns with psk3 appended to the third.
    private static let pattern: [[Token]] = [[.e], [.e, .ee, .s, .es], [.s, .se, .psk]]

    /// The fixed bytes each message carries around its payload. Every payload is encrypted (the
    /// psk modifier keys the cipher right after the first `e`), so each has a 16-byte tag:
    /// 1: e(32) + tag; 2: e(32) + encrypted s(32+16) + tag; 3: encrypted s(48) + tag.
    private static let overhead = [48, 96, 64]

    public let role: Role
    private let localStatic: X25519PrivateKey
    private let psk: SecretBytes
    /// Set only by tests that need reproducible messages; otherwise a fresh key per handshake.
    private let presetEphemeral: X25519PrivateKey?

    /// `nil` once the handshake failed or was split: the keys are dropped with it.
    private var symmetric: NoiseSymmetricState?
    private var localEphemeral: X25519PrivateKey?
    private var remoteEphemeral: X25519PublicKey?
    /// The peer's static key, known after message 2 (initiator) or 3 (responder). Authenticated
    /// as a network member only once `isComplete` (the psk comes last); cleared on failure.
    public private(set) var remoteStatic: X25519PublicKey?
    /// Messages processed so far, 0...3.
    private var step = 0

    public init(role: Role, localStatic: X25519PrivateKey, psk: [UInt8], prologue: [UInt8],
                ephemeral: X25519PrivateKey? = nil) throws(NoiseError) {
        guard psk.count == Self.preSharedKeyLength else { throw .invalidPreSharedKey(length: psk.count) }
        self.role = role
        self.localStatic = localStatic
        self.psk = SecretBytes(psk)
        presetEphemeral = ephemeral
        var symmetric = NoiseSymmetricState(protocolName: Array(Self.protocolName.utf8))
        symmetric.mixHash(prologue)  // both sides must agree on the prologue or decryption fails
        self.symmetric = symmetric
    }

    /// True after the third message was written or read successfully; then `split()` may be used.
    public var isComplete: Bool { symmetric != nil && step == Self.pattern.count }

    /// The transcript hash `h` (64 bytes): equal on both sides after success, usable for channel
    /// binding (e.g. signing it with the Ed25519 identity). Empty after a failure; after `split()`
    /// the transport carries it.
    public var handshakeHash: [UInt8] { symmetric?.hash ?? [] }

    /// Whether the next handshake message is ours to write (initiator writes messages 1 and 3).
    private var writesNext: Bool { (step % 2 == 0) == (role == .initiator) }

    /// Produces the next handshake message carrying `payload` (may be empty; encrypted, but
    /// before message 3 not yet authenticated by the psk).
    public mutating func writeMessage(payload: [UInt8]) throws(NoiseError) -> [UInt8] {
        do {
            return try write(payload: payload)
        } catch {
            fail()
            throw error
        }
    }

    /// Consumes the peer's next handshake message and returns its payload.
    public mutating func readMessage(_ message: [UInt8]) throws(NoiseError) -> [UInt8] {
        do {
            return try read(message)
        } catch {
            fail()
            throw error
        }
    }

    /// The transport cipher states. Only after completion; the handshake state is finished with.
    public consuming func split() throws(NoiseError) -> NoiseTransport {
        guard let symmetric else { throw .unusable }
        guard isComplete, let remoteStatic else { throw .handshakeIncomplete }
        let (initiatorToResponder, responderToInitiator) = symmetric.split()
        let transport = NoiseTransport(
            sender: role == .initiator ? initiatorToResponder : responderToInitiator,
            receiver: role == .initiator ? responderToInitiator : initiatorToResponder,
            handshakeHash: symmetric.hash, remoteStatic: remoteStatic)
        self.symmetric = nil
        return transport
    }

    // MARK: - Message processing

    private mutating func write(payload: [UInt8]) throws(NoiseError) -> [UInt8] {
        guard var symmetric else { throw .unusable }
        guard step < Self.pattern.count, writesNext else { throw .outOfOrder }
        let length = Self.overhead[step] + payload.count
        guard length <= Self.maxMessageLength else { throw .messageTooLong(length: length) }

        var message: [UInt8] = []
        message.reserveCapacity(length)
        for token in Self.pattern[step] {
            switch token {
            case .e:
                let ephemeral = presetEphemeral ?? X25519PrivateKey()
                localEphemeral = ephemeral
                message += ephemeral.publicKey.bytes
                symmetric.mixHash(ephemeral.publicKey.bytes)
                symmetric.mixKey(ephemeral.publicKey.bytes)  // psk modifier
            case .s:
                message += try symmetric.encryptAndHash(localStatic.publicKey.bytes)
            case .ee, .es, .se:
                symmetric.mixKey(try dh(token))
            case .psk:
                symmetric.mixKeyAndHash(psk)
            }
        }
        message += try symmetric.encryptAndHash(payload)
        self.symmetric = symmetric
        step += 1
        return message
    }

    private mutating func read(_ message: [UInt8]) throws(NoiseError) -> [UInt8] {
        guard var symmetric else { throw .unusable }
        guard step < Self.pattern.count, !writesNext else { throw .outOfOrder }
        guard message.count <= Self.maxMessageLength else { throw .messageTooLong(length: message.count) }
        guard message.count >= Self.overhead[step] else { throw .messageTooShort(length: message.count) }

        // The length check above guarantees every fixed-size field below is present.
        var rest = message[...]
        func take(_ count: Int) -> [UInt8] {
            defer { rest = rest.dropFirst(count) }
            return Array(rest.prefix(count))
        }
        for token in Self.pattern[step] {
            switch token {
            case .e:
                let bytes = take(X25519PublicKey.byteCount)
                remoteEphemeral = try! X25519PublicKey(bytes: bytes)  // 32 bytes by construction
                symmetric.mixHash(bytes)
                symmetric.mixKey(bytes)  // psk modifier
            case .s:
                let sealed = take(X25519PublicKey.byteCount + (symmetric.hasKey ? ChaChaPoly.tagByteCount : 0))
                let opened = try symmetric.decryptAndHash(sealed)
                remoteStatic = try! X25519PublicKey(bytes: opened)  // 32 bytes by construction
            case .ee, .es, .se:
                symmetric.mixKey(try dh(token))
            case .psk:
                symmetric.mixKeyAndHash(psk)
            }
        }
        let payload = try symmetric.decryptAndHash(Array(rest))
        self.symmetric = symmetric
        step += 1
        return payload
    }

    /// The DH a token names, from this side's point of view: `es` is the initiator's ephemeral
    /// with the responder's static, so the responder computes it as DH(s, re); `se` mirrors it.
    private func dh(_ token: Token) throws(NoiseError) -> SecretBytes {
        let local: X25519PrivateKey?
        let remote: X25519PublicKey?
        switch (token, role) {
        case (.ee, _): (local, remote) = (localEphemeral, remoteEphemeral)
        case (.es, .initiator), (.se, .responder): (local, remote) = (localEphemeral, remoteStatic)
        case (.es, .responder), (.se, .initiator): (local, remote) = (localStatic, remoteEphemeral)
        default: preconditionFailure("\(token) is not a DH token")
        }
        // The pattern fixes which keys exist at each token; missing ones would be a bug here.
        guard let local, let remote else { preconditionFailure("key missing for \(token)") }
        do {
            return try local.sharedSecret(with: remote)
        } catch {
            throw .invalidRemoteKey
        }
    }

    /// Drops every key and what was learned from the peer, so a failed handshake can neither be
    /// continued nor mistaken for an authenticated identity.
    private mutating func fail() {
        symmetric = nil
        localEphemeral = nil
        remoteEphemeral = nil
        remoteStatic = nil
    }
}
