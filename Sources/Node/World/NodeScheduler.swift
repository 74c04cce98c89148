import Dispatch
import Transport

/// Every way work reaches a queue later: a hop onto a queue (the node's, or a helper's beside
/// it), a one-shot timer and a repeating one. All three go through here so that a simulation
/// decides when each runs; the order they run in is then a function of its seed.
public protocol NodeScheduler: Sendable {
    /// Runs `body` on `queue` soon, after what is queued there already.
    func async(on queue: DispatchQueue, _ body: @escaping @Sendable () -> Void)
    /// Runs `body` once on `queue` after `delay`, unless cancelled first.
    func after(_ delay: DispatchTimeInterval, on queue: DispatchQueue, _ body: @escaping @Sendable () -> Void) -> any Cancellable
    /// Runs `body` on `queue` every `interval`, first after one interval, until cancelled or released.
    func every(_ interval: DispatchTimeInterval, on queue: DispatchQueue, _ body: @escaping @Sendable () -> Void) -> any Cancellable
}

/// Dispatch itself: `queue.async`, Dispatch timer sources.
public struct DispatchScheduler: NodeScheduler {
    public init() {}

    public func async(on queue: DispatchQueue, _ body: @escaping @Sendable () -> Void) {
        queue.async(execute: body)
    }

    public func after(_ delay: DispatchTimeInterval, on queue: DispatchQueue, _ body: @escaping @Sendable () -> Void) -> any Cancellable {
        schedule(after: delay, on: queue, body)
    }

    public func every(_ interval: DispatchTimeInterval, on queue: DispatchQueue, _ body: @escaping @Sendable () -> Void) -> any Cancellable {
        RepeatingTimer(interval: interval, queue: queue, handler: body)
    }
}
