import Crypto

/// A session's outgoing stream, written straight into the layout it takes on TCP: Noise
/// transport messages of at most `NoiseTransport.maxPlaintextLength` bytes of the stream, each
/// after its u16be length and followed by room for its tag (Protocol.md §8.1, §8.2).
///
/// Why: a 64 KiB chunk spans two Noise messages. Framing, cutting, encrypting and prefixing it
/// as separate arrays copied it five times; here the stream bytes are copied once, into the
/// wire buffer, and sealed in place. Messages written before one `seal` share Noise messages, so
/// a burst of small messages (chunk requests, records) costs one seal and one write.
struct SessionOutput {
    private var wire: [UInt8] = []
    /// Where each Noise message (its length prefix) begins in `wire`.
    private var messages: [Int] = []
    /// Stream bytes in the last message so far.
    private var fill = 0

    var isEmpty: Bool { messages.isEmpty }

    /// Makes room for `count` more stream bytes, so a burst of chunks grows the buffer once.
    mutating func reserve(_ count: Int) {
        let perMessage = 2 + ChaChaPoly.tagByteCount
        let messagesNeeded = count / NoiseTransport.maxPlaintextLength + 2
        wire.reserveCapacity(wire.count + count + messagesNeeded * perMessage)
    }

    /// Appends stream bytes, starting a new Noise message whenever the current one is full.
    mutating func append(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { append($0) }
    }

    mutating func append(_ bytes: UnsafeRawBufferPointer) {
        var offset = 0
        while offset < bytes.count {
            if messages.isEmpty || fill == NoiseTransport.maxPlaintextLength { startMessage() }
            let count = min(NoiseTransport.maxPlaintextLength - fill, bytes.count - offset)
            wire.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + count]))
            fill += count
            offset += count
        }
    }

    private mutating func startMessage() {
        if !messages.isEmpty { wire.append(contentsOf: repeatElement(0, count: ChaChaPoly.tagByteCount)) }
        messages.append(wire.count)
        wire.append(contentsOf: [0, 0])
        fill = 0
    }

    /// Seals every pending Noise message with the transport's next nonces and returns the bytes
    /// to write; the output is empty afterwards. On failure (nonce exhaustion) nothing is returned.
    mutating func seal(with transport: inout NoiseTransport) throws(NoiseError) -> [UInt8] {
        guard !messages.isEmpty else { return [] }
        wire.append(contentsOf: repeatElement(0, count: ChaChaPoly.tagByteCount))
        var out = [UInt8]()
        swap(&out, &wire)
        let starts = messages
        messages = []
        fill = 0
        var failure: NoiseError?
        out.withUnsafeMutableBytes { raw in
            for (index, start) in starts.enumerated() {
                let end = index + 1 < starts.count ? starts[index + 1] : raw.count
                let length = end - start - 2
                raw[start] = UInt8(length >> 8)
                raw[start + 1] = UInt8(length & 0xFF)
                do throws(NoiseError) {
                    try transport.encryptInPlace(UnsafeMutableRawBufferPointer(rebasing: raw[start + 2..<end]))
                } catch {
                    failure = error
                    return
                }
            }
        }
        if let failure { throw failure }
        return out
    }
}
