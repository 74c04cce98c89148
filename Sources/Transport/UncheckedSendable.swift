/// Carries a value across a `@Sendable` boundary (a timer handler, a block sent to a queue,
/// `concurrentPerform`'s workers) that the compiler cannot see is safe: the value stays
/// confined to one serial queue, or each thread touches only its own part. The one who wraps
/// it vouches for that.
public struct UncheckedSendable<T>: @unchecked Sendable {
    public let value: T
    public init(_ value: T) { self.value = value }
}
