import Dispatch

/// Runs `body` once on `queue` after `delay`, unless cancelled first.
///
/// Fire-and-forget: the pending timer keeps itself alive until it fires or is
/// cancelled, so the result may be ignored when cancelling is never needed.
/// Leeway follows `TimerLeeway` (10% of the delay, 1 ms ... 1 s).
/// May be called from any thread.
@discardableResult
public func schedule(
    after delay: DispatchTimeInterval,
    on queue: DispatchQueue,
    _ body: @escaping @Sendable () -> Void
) -> any Cancellable {
    OneShotTimer(delay: delay, queue: queue, body: body)
}

/// The timer behind `schedule(after:on:_:)`.
///
/// Its event handler holds the object itself, a deliberate cycle that keeps it
/// alive while pending; cancelling (explicitly or after firing) releases the
/// handler and so breaks the cycle.
final class OneShotTimer: Cancellable, @unchecked Sendable {
    private let source: any DispatchSourceTimer

    init(delay: DispatchTimeInterval, queue: DispatchQueue, body: @escaping @Sendable () -> Void) {
        source = DispatchSource.makeTimerSource(queue: queue)
        source.schedule(deadline: .now() + delay, repeating: .never, leeway: TimerLeeway.default(for: delay))
        source.setEventHandler { [self] in
            source.cancel()
            body()
        }
        source.resume()
    }

    func cancel() {
        source.cancel()
    }
}

/// Seconds on a monotonic clock, for timeouts and expiry (never jumps with the wall clock).
public func monotonicSeconds() -> Double {
    Double(DispatchTime.now().uptimeNanoseconds) / 1e9
}
