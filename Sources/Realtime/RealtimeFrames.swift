/// How the Firebase SDKs carry one protocol message over websocket messages: a message of
/// more than 16384 characters goes as its frame count (a text message of at most six digits)
/// followed by that many pieces, joined by the receiver. A bare `0` is the client's
/// keep-alive. Both directions use this framing.
public enum RealtimeFrames {
    /// The most characters (UTF-16 code units, as JavaScript counts them) in one piece.
    public static let maxFrameCharacters = 16384

    /// The websocket text messages that carry `text`: itself when short enough, else the count
    /// and the pieces. Pieces are cut between Unicode scalars, never inside one, so each is
    /// valid UTF-8 on its own as a websocket text message must be.
    public static func split(_ text: String) -> [String] {
        split(utf8: Array(text.utf8)).map { String(decoding: $0, as: UTF8.self) }
    }

    /// `split` over the UTF-8 bytes of valid text: the pieces as bytes, counted in UTF-16 code
    /// units (a scalar of four UTF-8 bytes is two units, any other one), cut at scalar starts.
    public static func split(utf8 bytes: [UInt8]) -> [[UInt8]] {
        var units = 0
        var cuts: [Int] = [0]
        var inPiece = 0
        for (i, byte) in bytes.enumerated() where byte & 0xC0 != 0x80 {
            let width = byte >= 0xF0 ? 2 : 1
            if inPiece + width > maxFrameCharacters {
                cuts.append(i)
                inPiece = 0
            }
            inPiece += width
            units += width
        }
        guard units > maxFrameCharacters else { return [bytes] }
        cuts.append(bytes.count)
        var pieces: [[UInt8]] = [Array(String(cuts.count - 1).utf8)]
        for k in 0..<(cuts.count - 1) { pieces.append(Array(bytes[cuts[k]..<cuts[k + 1]])) }
        return pieces
    }
}

/// Joins incoming pieces back into protocol messages, within a byte bound for the whole
/// message; a frame count announces how many pieces follow.
public struct RealtimeFrameAssembler: Sendable {
    /// The bound; it may be changed between messages, as `WebSocketParser.maxMessageBytes` may.
    public var maxMessageBytes: Int
    private var expected = 0
    private var received = 0
    private var parts: [UInt8] = []

    public init(maxMessageBytes: Int) {
        self.maxMessageBytes = maxMessageBytes
    }

    /// Takes one websocket text message; answers a whole protocol message when one is complete,
    /// nil for a keep-alive, a frame count, or a piece of a message still arriving.
    public mutating func receive(_ text: [UInt8]) throws(RealtimeError) -> [UInt8]? {
        if expected > 0 {
            guard parts.count + text.count <= maxMessageBytes else {
                throw RealtimeError("too_big", "A message larger than \(maxMessageBytes) bytes")
            }
            parts += text
            received += 1
            guard received == expected else { return nil }
            let whole = parts
            parts = []
            expected = 0
            received = 0
            return whole
        }
        if text.count <= 6, !text.isEmpty, text.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) {
            // Six digits at most: the count itself is bounded, and the bytes are bounded above.
            let count = text.reduce(0) { $0 * 10 + Int($1 - 0x30) }
            expected = count  // 0 is the keep-alive
            return nil
        }
        guard text.count <= maxMessageBytes else { throw RealtimeError("too_big", "A message larger than \(maxMessageBytes) bytes") }
        return text
    }
}
