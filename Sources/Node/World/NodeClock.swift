import Foundation
import Transport

/// The two clocks a node reads: the wall clock stamps records (and may be wrong, by any amount),
/// the monotonic one measures timeouts and expiry (it never jumps).
public protocol NodeClock: Sendable {
    /// Milliseconds since the Unix epoch.
    func wallMillis() -> UInt64
    /// Seconds since an arbitrary start, never going back.
    func monotonicSeconds() -> Double
}

/// The machine's clocks.
public struct SystemClock: NodeClock {
    public init() {}
    public func wallMillis() -> UInt64 { UInt64(Date().timeIntervalSince1970 * 1000) }
    public func monotonicSeconds() -> Double { Transport.monotonicSeconds() }
}
