/// A hybrid logical clock (Kulkarni et al., 2014) packed into one 64-bit
/// integer: `(milliseconds since the Unix epoch << 16) | 16-bit counter`.
///
/// Timestamps order all writes across peers consistently with causality while
/// staying close to wall-clock time, and as plain integers they compare and
/// store cheaply. The counter rules are applied to the packed integer, so a
/// counter overflow simply carries into the milliseconds.
public struct HybridLogicalClock: Sendable {
    /// The latest timestamp issued or observed; every new one is greater.
    public var last: UInt64
    /// How far ahead of local time (ms) a remote timestamp may be.
    public let maxDrift: UInt64

    /// A clock resuming from `last` (e.g. persisted), refusing remote
    /// timestamps more than `maxDrift` ms ahead (default five minutes).
    public init(last: UInt64 = 0, maxDrift: UInt64 = 5 * 60 * 1000) {
        self.last = last
        self.maxDrift = maxDrift
    }

    /// A timestamp for a local event: `max(last + 1, nowMillis << 16)`.
    public mutating func send(nowMillis: UInt64) -> UInt64 {
        let stamp = max(Self.successor(last), Self.pack(millis: nowMillis, counter: 0))
        last = stamp
        return stamp
    }

    /// Merges a remote timestamp and returns one for the receive event:
    /// `max(last + 1, remote + 1, nowMillis << 16)`. Throws (leaving the
    /// clock unchanged) when the remote is too far ahead; see `accepts`.
    public mutating func receive(_ remote: UInt64, nowMillis: UInt64) throws(ClockError) -> UInt64 {
        guard accepts(remote, nowMillis: nowMillis) else {
            throw .tooFarAhead(remoteMillis: Self.millis(of: remote), localMillis: nowMillis)
        }
        let stamp = max(Self.successor(last), Self.successor(remote), Self.pack(millis: nowMillis, counter: 0))
        last = stamp
        return stamp
    }

    /// The drift check alone: whether `remote`'s milliseconds are at most
    /// `nowMillis + maxDrift`.
    public func accepts(_ remote: UInt64, nowMillis: UInt64) -> Bool {
        let (limit, overflow) = nowMillis.addingReportingOverflow(maxDrift)
        return overflow || Self.millis(of: remote) <= limit
    }

    /// The wall-clock part of a timestamp, in milliseconds.
    public static func millis(of stamp: UInt64) -> UInt64 { stamp >> 16 }

    /// The logical counter part of a timestamp.
    public static func counter(of stamp: UInt64) -> UInt16 { UInt16(truncatingIfNeeded: stamp) }

    /// Builds a timestamp from its parts (milliseconds beyond 48 bits are dropped).
    public static func pack(millis: UInt64, counter: UInt16) -> UInt64 {
        millis << 16 | UInt64(counter)
    }

    /// `stamp + 1`, saturating instead of trapping at the (unreachable) maximum.
    private static func successor(_ stamp: UInt64) -> UInt64 {
        stamp == .max ? .max : stamp + 1
    }
}
