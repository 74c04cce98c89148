import Crypto
import Dispatch
import Transport

/// Browser logins to the local API's web app. `lanchat open` asks the node (control request
/// `login MILLIS SIGNATURE`, signed with the node's identity key, so only who can read the data
/// directory's key file gets one) for a one-time token; the browser presents it once at `/?login=TOKEN` and gets a
/// session secret in return, which it keeps as a cookie. Both live in the node's memory only
/// (a restarted node forgets them: run `lanchat open` again) and are compared by their hash.
struct NodeLoginState {
    /// One-time tokens not yet used, by hash, with when they expire (monotonic seconds).
    var pending: [[UInt8]: Double] = [:]
    /// Session secrets handed out, by hash, with when they were last used (monotonic seconds).
    var sessions: [[UInt8]: Double] = [:]

    /// How long a one-time token stays usable.
    static let tokenLifetime = 300.0
    /// A session not used for this long is forgotten.
    static let sessionIdleLifetime = 30.0 * 24 * 3600
    /// Most outstanding tokens and sessions; the oldest give way.
    static let maxPending = 32
    static let maxSessions = 64

    /// The newest login request's time accepted, so a captured request cannot be replayed.
    var lastRequestMillis: UInt64 = 0

    /// How far a login request's time may be from the node's clock.
    static let requestWindowMillis: UInt64 = 60_000

    static func hash(_ secret: String) -> [UInt8] { BLAKE2b.hash(Array(secret.utf8)) }

    static func signedText(_ millis: UInt64) -> [UInt8] { Array("lanchat/login/v1".utf8) + [0] + Array(String(millis).utf8) }
}

/// The CLI's side: the proof that goes after `login ` on the control channel.
public enum LoginRequest {
    public static func proof(signer: PrivateKey, nowMillis: UInt64) throws -> String {
        let signature = try signer.sign(NodeLoginState.signedText(nowMillis))
        return "\(nowMillis) \(Base64URL.encode(signature.bytes))"
    }
}

extension Node {
    /// Answers the control request `login PROOF`: `{"token": ...}` when PROOF is a recent
    /// signature by this node's identity, else an error.
    func answerLoginRequestOnQueue(_ proof: String) -> String {
        let parts = proof.split(separator: " ")
        let now = wallMillis()
        guard parts.count == 2, let millis = UInt64(parts[0]), let raw = Base64URL.decode(String(parts[1])),
              let signature = try? Signature(bytes: raw),
              identity.publicKey.verify(signature, for: NodeLoginState.signedText(millis))
        else { return "{\"error\":\"the login request is not signed by this node's identity\"}" }
        guard millis > login.lastRequestMillis, millis + NodeLoginState.requestWindowMillis > now,
              millis < now + NodeLoginState.requestWindowMillis
        else { return "{\"error\":\"the login request is stale (check the clock)\"}" }
        login.lastRequestMillis = millis
        return "{\"token\":\"\(issueLoginTokenOnQueue())\"}"
    }

    /// A fresh one-time login token, valid for `NodeLoginState.tokenLifetime` seconds; call on the
    /// node's queue.
    public func issueLoginTokenOnQueue() -> String {
        dispatchPrecondition(condition: .onQueue(queue))
        let now = monotonicSeconds()
        login.pending = login.pending.filter { $0.value > now }
        while login.pending.count >= NodeLoginState.maxPending, let oldest = login.pending.min(by: { $0.value < $1.value }) {
            login.pending.removeValue(forKey: oldest.key)
        }
        let token = Base64URL.encode(secureRandomBytes(24))
        login.pending[NodeLoginState.hash(token)] = now + NodeLoginState.tokenLifetime
        return token
    }

    /// Uses up a one-time login token: a new session secret if it was issued, unused and
    /// unexpired, else nil. Call on the node's queue.
    public func redeemLoginTokenOnQueue(_ token: String) -> String? {
        dispatchPrecondition(condition: .onQueue(queue))
        let now = monotonicSeconds()
        guard let expiry = login.pending.removeValue(forKey: NodeLoginState.hash(token)), expiry > now else { return nil }
        login.sessions = login.sessions.filter { now - $0.value < NodeLoginState.sessionIdleLifetime }
        while login.sessions.count >= NodeLoginState.maxSessions, let oldest = login.sessions.min(by: { $0.value < $1.value }) {
            login.sessions.removeValue(forKey: oldest.key)
        }
        let session = Base64URL.encode(secureRandomBytes(32))
        login.sessions[NodeLoginState.hash(session)] = now
        return session
    }

    /// Whether `secret` is a live session secret (and marks it used). Call on the node's queue.
    public func isLoginSessionOnQueue(_ secret: String) -> Bool {
        dispatchPrecondition(condition: .onQueue(queue))
        guard !secret.isEmpty else { return false }
        let key = NodeLoginState.hash(secret)
        let now = monotonicSeconds()
        guard let used = login.sessions[key], now - used < NodeLoginState.sessionIdleLifetime else { return false }
        login.sessions[key] = now
        return true
    }
}
