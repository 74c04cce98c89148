/// A token bucket: the rate limit of live values per author (`LiveTable`) and of sealed live
/// values relayed per author (`SealedLiveRelay`). It fills at a rate up to a burst, and each
/// value taken spends one token. Pure: the time comes in.
struct TokenBucket: Sendable {
    private(set) var tokens: Double
    private var refilled: Double

    /// A full bucket, as an author not heard from before gets.
    init(full burst: Double, at now: Double) {
        tokens = burst
        refilled = now
    }

    /// Adds what `rate` tokens a second have made since the last refill, up to `burst`.
    mutating func refill(now: Double, rate: Double, burst: Double) {
        tokens = min(burst, tokens + (now - refilled) * rate)
        refilled = now
    }

    /// Whether a token is there to take (after a `refill`).
    var hasToken: Bool { tokens >= 1 }

    mutating func take() { tokens -= 1 }

    /// Whether it would be full by `now`: then it says nothing a fresh bucket would not.
    func wouldBeFull(now: Double, rate: Double, burst: Double) -> Bool {
        tokens + (now - refilled) * rate >= burst
    }
}
