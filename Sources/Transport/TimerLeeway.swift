import Dispatch

/// The default slack granted to timers.
///
/// Leeway lets the kernel fire several timers in one wakeup instead of waking
/// the CPU for each. Chat timers (heartbeats, retries, announcements) do not
/// need precision, but a retry delayed far beyond its interval would slow
/// recovery, so the slack is 10% of the interval, kept between 1 ms (so short
/// timers can still coalesce) and 1 s (so long timers stay near their time).
enum TimerLeeway {
    static let minimumNanoseconds: Int64 = 1_000_000
    static let maximumNanoseconds: Int64 = 1_000_000_000

    static func `default`(for interval: DispatchTimeInterval) -> DispatchTimeInterval {
        guard let nanoseconds = nanoseconds(of: interval) else { return .nanoseconds(Int(maximumNanoseconds)) }
        let tenth = nanoseconds / 10
        return .nanoseconds(Int(min(max(tenth, minimumNanoseconds), maximumNanoseconds)))
    }

    /// The interval in nanoseconds, or nil for `.never`.
    static func nanoseconds(of interval: DispatchTimeInterval) -> Int64? {
        switch interval {
        case .seconds(let n): return Int64(n).multipliedReportingOverflow(by: 1_000_000_000).partialValue
        case .milliseconds(let n): return Int64(n).multipliedReportingOverflow(by: 1_000_000).partialValue
        case .microseconds(let n): return Int64(n).multipliedReportingOverflow(by: 1_000).partialValue
        case .nanoseconds(let n): return Int64(n)
        case .never: return nil
        @unknown default: return nil
        }
    }
}
