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
        guard text.utf16.count > maxFrameCharacters else { return [text] }
        var pieces: [String] = []
        var current = String.UnicodeScalarView()
        var units = 0
        for scalar in text.unicodeScalars {
            let width = scalar.utf16.count
            if units + width > maxFrameCharacters {
                pieces.append(String(current))
                current = String.UnicodeScalarView()
                units = 0
            }
            current.append(scalar)
            units += width
        }
        if !current.isEmpty { pieces.append(String(current)) }
        return [String(pieces.count)] + pieces
    }
}

/// Joins incoming pieces back into protocol messages, within a byte bound for the whole
/// message; a frame count announces how many pieces follow.
public struct RealtimeFrameAssembler: Sendable {
    public let maxMessageBytes: Int
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
