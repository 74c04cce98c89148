/// What a range asks of the receiver, as numbered on the wire.
enum NegentropyMode: UInt64, Sendable {
    /// The sender is done with this range.
    case skip = 0
    /// The sender's fingerprint of its ids in the range follows.
    case fingerprint = 1
    /// All of the sender's ids in the range follow.
    case idList = 2
}

/// One decoded range. Payloads point into the message instead of copying it, so decoding a
/// large id list allocates nothing per id.
struct NegentropyRange: Sendable {
    enum Payload: Sendable {
        case skip
        /// Offset of the 16 fingerprint bytes in the message.
        case fingerprint(offset: Int)
        /// Offset of the first id and how many 32-byte ids follow.
        case idList(offset: Int, count: Int)
    }

    var upperBound: NegentropyBound
    var payload: Payload
}
