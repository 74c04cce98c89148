import Dispatch

/// A Dispatch source together with whether it is currently suspended.
///
/// Dispatch keeps a suspend count but does not expose it, and it traps when a
/// source is resumed more often than it was suspended, or when a suspended
/// source is cancelled and released (its cancel handler never runs). Tracking
/// the state here makes `suspend`/`resume` idempotent and lets `cancel` always
/// leave the source running so that its cancel handler fires.
///
/// Confined to `queue`: every method must be called on it.
final class WatchedSource: @unchecked Sendable {
    private let source: any DispatchSourceProtocol
    private let queue: DispatchQueue
    /// Sources are created inactive, which behaves like one suspension.
    private(set) var isSuspended = true
    private(set) var isCancelled = false

    init(_ source: any DispatchSourceProtocol, queue: DispatchQueue) {
        self.source = source
        self.queue = queue
    }

    /// Installs the handlers; call before the first `resume()`.
    func setHandlers(event: @escaping @Sendable () -> Void, cancel: @escaping @Sendable () -> Void) {
        source.setEventHandler(handler: event)
        source.setCancelHandler(handler: cancel)
    }

    /// Lets events through; does nothing if already running or cancelled.
    func resume() {
        dispatchPrecondition(condition: .onQueue(queue))
        guard isSuspended, !isCancelled else { return }
        isSuspended = false
        source.resume()
    }

    /// Holds events back; does nothing if already suspended or cancelled.
    func suspend() {
        dispatchPrecondition(condition: .onQueue(queue))
        guard !isSuspended, !isCancelled else { return }
        isSuspended = true
        source.suspend()
    }

    /// Cancels for good. A suspended source is resumed after cancelling so its
    /// cancel handler runs; no event handler can slip in between because both
    /// would run on this same serial queue, which we are occupying.
    func cancel() {
        dispatchPrecondition(condition: .onQueue(queue))
        guard !isCancelled else { return }
        isCancelled = true
        source.cancel()
        if isSuspended {
            isSuspended = false
            source.resume()
        }
    }
}
