import Dispatch

/// Runs a handler on a queue every `interval` until cancelled or released.
///
/// Unlike `schedule(after:on:_:)`, a repeating timer stops when its last
/// reference goes away: the owner holds it for as long as the repetition
/// should last, so a forgotten timer cannot tick forever.
///
/// The timer is never suspended, only cancelled, so it has no mutable state
/// and `cancel()` is safe from any thread.
public final class RepeatingTimer: Cancellable, @unchecked Sendable {
    private let source: any DispatchSourceTimer

    /// Starts the timer right away.
    ///
    /// - Parameters:
    ///   - interval: time between runs.
    ///   - initialDelay: time before the first run; defaults to `interval`.
    ///   - leeway: slack the system may add to coalesce wakeups; defaults to
    ///     10% of the interval clamped to 1 ms ... 1 s (see `TimerLeeway`).
    ///   - queue: where `handler` runs.
    public init(
        interval: DispatchTimeInterval,
        initialDelay: DispatchTimeInterval? = nil,
        leeway: DispatchTimeInterval? = nil,
        queue: DispatchQueue,
        handler: @escaping @Sendable () -> Void
    ) {
        source = DispatchSource.makeTimerSource(queue: queue)
        source.schedule(
            deadline: .now() + (initialDelay ?? interval),
            repeating: interval,
            leeway: leeway ?? TimerLeeway.default(for: interval))
        source.setEventHandler(handler: handler)
        source.resume()
    }

    deinit {
        source.cancel()
    }

    /// Stops the timer; further calls do nothing.
    public func cancel() {
        source.cancel()
    }
}
