/// Why a Negentropy session refused a message or a call.
///
/// Every message comes from an untrusted peer, so decoding fails with one of these instead of
/// trapping; a session that throws is left unchanged and may be used again or dropped.
public enum NegentropyError: Error, Equatable, Hashable, Sendable {
    /// The first byte is not protocol version 1 (0x61). A responder should send
    /// `NegentropySession.unsupportedVersionReply` back so the peer can downgrade and retry.
    case unsupportedVersion(UInt8)
    /// The message ended in the middle of a varint, bound, fingerprint or id (or was empty).
    case truncated
    /// A range's upper bound is not strictly greater than the previous one, so ranges would
    /// overlap or run backwards (only an empty infinity-to-infinity range is tolerated).
    case invalidBoundOrder
    /// A varint is longer than the 10 bytes a `UInt64` needs, or its value overflows 64 bits.
    case varintOverflow
    /// A varint starts with a zero digit; the protocol requires the shortest encoding.
    case nonMinimalVarint
    /// A bound's timestamp delta pushes the timestamp past the 64-bit range.
    case timestampOverflow
    /// A bound declares an id prefix longer than the 32-byte id.
    case idPrefixTooLong(UInt64)
    /// A range mode other than Skip (0), Fingerprint (1) or IdList (2).
    case invalidMode(UInt64)
    /// An IdList declares more ids than the rest of the message could hold.
    case idListCountExceedsMessage(UInt64)
    /// The message is larger than the session's `maxMessageBytes`.
    case messageTooLarge(Int)
    /// The message holds more ranges than the session's `maxRanges`.
    case tooManyRanges
    /// `frameSizeLimit` is neither 0 (unlimited) nor at least 4096, the protocol minimum that
    /// guarantees every message can make progress.
    case frameSizeLimitTooSmall(Int)
    /// `initiate()` was called twice, or after the session already answered as responder.
    case wrongRole
    /// An in-memory reconciliation did not converge within its round limit (a bug guard).
    case roundLimitExceeded
}
