import Crypto

/// The randomness that changes what a node does: its instance id, and the peer each
/// anti-entropy round picks. (Noise ephemerals and datagram nonces stay with libsodium: nothing
/// branches on their values.)
public protocol NodeRandom: Sendable {
    /// `count` random bytes.
    func bytes(_ count: Int) -> [UInt8]
    /// A number in `0..<bound` (`bound` > 0).
    func index(below bound: Int) -> Int
}

/// libsodium's generator.
public struct SystemRandom: NodeRandom {
    public init() {}
    public func bytes(_ count: Int) -> [UInt8] { secureRandomBytes(count) }
    public func index(below bound: Int) -> Int { Int.random(in: 0..<bound) }
}
