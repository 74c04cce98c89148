import Dispatch
import Node
import TestSupport
import Transport

/// What one simulated machine looks like to the node on it: its clocks (the simulation's time,
/// with the machine's own boot time and wall-clock error), timers and queue hops as events of
/// the loop, the simulated network, and a seeded generator.
final class HostClock: NodeClock, @unchecked Sendable {
    private let loop: EventLoop
    /// Wall-clock milliseconds at simulated time zero, plus this machine's error.
    var wallAtZero: Int64
    /// Monotonic seconds at simulated time zero (machines booted at different times).
    let bootOffset: Double

    init(loop: EventLoop, wallAtZero: Int64, bootOffset: Double) {
        self.loop = loop
        self.wallAtZero = wallAtZero
        self.bootOffset = bootOffset
    }

    func wallMillis() -> UInt64 { UInt64(max(0, wallAtZero + Int64(loop.now / 1_000_000))) }
    func monotonicSeconds() -> Double { bootOffset + Double(loop.now) / 1e9 }
}

/// Timers and hops of one host incarnation, as events of the loop.
final class HostScheduler: NodeScheduler, @unchecked Sendable {
    private let loop: EventLoop
    let host: Int
    let epoch: Int
    /// Simulated time a hop onto a queue takes (the queue's turn coming round).
    static let hopNanos: UInt64 = 20_000

    init(loop: EventLoop, host: Int, epoch: Int) {
        self.loop = loop
        self.host = host
        self.epoch = epoch
    }

    /// The timers made, so that a crash can stop them all (a killed process's timers die with it).
    private var made: [WeakCancellable] = []

    /// Cancels every timer of this incarnation.
    func cancelAll() {
        for timer in made { timer.value?.cancel() }
        made.removeAll()
    }

    func async(on queue: DispatchQueue, _ body: @escaping @Sendable () -> Void) {
        loop.at(loop.now + Self.hopNanos, host: host, epoch: epoch, "hop \(queue.label)", on: queue, body)
    }

    func after(_ delay: DispatchTimeInterval, on queue: DispatchQueue, _ body: @escaping @Sendable () -> Void) -> any Cancellable {
        let timer = SimTimer()
        made.append(WeakCancellable(timer))
        loop.at(loop.now + delay.nanoseconds, host: host, epoch: epoch, "timer after \(delay.nanoseconds / 1_000_000) ms", on: queue) {
            guard !timer.cancelled else { return }
            timer.cancelled = true
            body()
        }
        return timer
    }

    func every(_ interval: DispatchTimeInterval, on queue: DispatchQueue, _ body: @escaping @Sendable () -> Void) -> any Cancellable {
        let timer = RepeatingSimTimer()
        made.append(WeakCancellable(timer))
        let step = interval.nanoseconds
        let tick = TickBox()
        tick.run = { [loop, host, epoch, weak timer] in
            guard let timer, !timer.cancelled else { return }
            body()
            loop.at(loop.now + step, host: host, epoch: epoch, "timer every \(step / 1_000_000) ms", on: queue) { tick.run?() }
        }
        loop.at(loop.now + step, host: host, epoch: epoch, "timer every \(step / 1_000_000) ms", on: queue) { tick.run?() }
        timer.onCancel = { tick.run = nil }
        return timer
    }
}

/// A timer that may have been released.
struct WeakCancellable {
    weak var value: (any Cancellable)?
    init(_ value: any Cancellable) { self.value = value }
}

/// A one-shot timer's cancellation flag.
final class SimTimer: Cancellable, @unchecked Sendable {
    var cancelled = false
    func cancel() { cancelled = true }
}

/// A repeating timer: stops when cancelled or released, as `RepeatingTimer` does.
final class RepeatingSimTimer: Cancellable, @unchecked Sendable {
    var cancelled = false
    var onCancel: (() -> Void)?
    func cancel() {
        cancelled = true
        onCancel?()
        onCancel = nil
    }
    deinit { onCancel?() }
}

/// Holds a repeating timer's next step (cleared on cancel, which ends the repetition).
final class TickBox: @unchecked Sendable {
    var run: (() -> Void)?
}

/// A host's seeded randomness.
final class HostRandom: NodeRandom, @unchecked Sendable {
    private var rng: SplitMix64
    init(seed: UInt64) { rng = SplitMix64(seed: seed) }
    func bytes(_ count: Int) -> [UInt8] { (0..<count).map { _ in UInt8.random(in: 0...255, using: &rng) } }
    func index(below bound: Int) -> Int { Int.random(in: 0..<bound, using: &rng) }
}

extension DispatchTimeInterval {
    /// The interval in nanoseconds (`.never` as a day).
    var nanoseconds: UInt64 {
        switch self {
        case let .seconds(s): return UInt64(max(0, s)) * 1_000_000_000
        case let .milliseconds(ms): return UInt64(max(0, ms)) * 1_000_000
        case let .microseconds(us): return UInt64(max(0, us)) * 1000
        case let .nanoseconds(ns): return UInt64(max(0, ns))
        default: return 86_400_000_000_000
        }
    }
}
