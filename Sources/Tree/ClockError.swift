/// Why a remote hybrid logical clock timestamp was refused.
///
/// A peer whose clock is far in the future would drag every node's clock
/// forward with it, so such timestamps are rejected instead of merged.
public enum ClockError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The remote timestamp's milliseconds exceed local time plus the allowed drift.
    case tooFarAhead(remoteMillis: UInt64, localMillis: UInt64)

    /// A sentence giving both clocks and how far apart they are.
    public var description: String {
        switch self {
        case .tooFarAhead(let remote, let local):
            return "remote clock is \(remote &- local) ms ahead (remote \(remote) ms, local \(local) ms)"
        }
    }
}
