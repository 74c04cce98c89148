/// The outcome of handling one peer message.
///
/// The initiator learns the differences (`have`, `need`) and gets its next query; the responder
/// only answers, because in Negentropy it is the initiator that decides what to transfer.
public struct NegentropyStep: Sendable, Equatable {
    /// Initiator only: ids we hold that the peer lacks (send these records). Each is 32 bytes,
    /// taken from our own items, and appears at most once per step.
    public var have: [[UInt8]]
    /// Initiator only: ids the peer holds that we lack (request these records). Each is 32 bytes
    /// copied from the peer's message, so the list is bounded by the message size.
    public var need: [[UInt8]]
    /// The message to send next. For the initiator, nil means reconciliation is complete; for
    /// the responder it is always the reply (possibly just the version byte).
    public var next: [UInt8]?

    public init(have: [[UInt8]] = [], need: [[UInt8]] = [], next: [UInt8]?) {
        self.have = have
        self.need = need
        self.next = next
    }

    /// True once the initiator has nothing left to ask.
    public var isComplete: Bool { next == nil }
}
