/// The receiving half of RFC 6455, sans IO: bytes in, whole messages and control frames out.
///
/// Everything a peer sends is bounded before it is buffered: a frame is refused as soon as its
/// header says its payload would take the message past `maxMessageBytes` (close 1009), so the
/// parser never holds more than one message plus one frame header beyond what the connection
/// has just read. Any breach of the framing rules (reserved bits, unknown opcodes, an unmasked
/// client frame, a fragmented or oversized control frame, a continuation with nothing to
/// continue, a length not in its shortest form) is a `WebSocketFailure` with the close code to
/// send; the parser then stays failed.
public struct WebSocketParser: Sendable {
    /// The largest message (all its fragments together) accepted. It may be changed between
    /// calls (a server takes little from a client until it has authenticated); a message in
    /// progress is held to the new bound from its next frame on.
    public var maxMessageBytes: Int
    /// Whether frames must be masked (a server reading a client) or must not be (a client).
    public let expectsMasked: Bool

    private var buffer: [UInt8] = []
    private var readIndex = 0
    /// The fragments of a message in progress, and its opcode (text or binary).
    private var message: [UInt8] = []
    private var messageOpcode: WebSocketOpcode?
    private var failure: WebSocketFailure?
    private var closed = false

    public init(maxMessageBytes: Int, expectsMasked: Bool = true) {
        self.maxMessageBytes = maxMessageBytes
        self.expectsMasked = expectsMasked
    }

    /// Bytes held: unparsed input and the fragments of a message in progress.
    public var bufferedBytes: Int { buffer.count - readIndex + message.count }

    /// Adds bytes read from the connection; ignored after a close frame or a failure.
    public mutating func append(_ bytes: some Sequence<UInt8>) {
        guard failure == nil, !closed else { return }
        buffer.append(contentsOf: bytes)
    }

    /// The next event, or nil when more bytes are needed. Throws the failure that ended
    /// parsing, now and on every later call.
    public mutating func next() throws(WebSocketFailure) -> WebSocketEvent? {
        if let failure { throw failure }
        guard !closed else { return nil }
        do {
            while true {
                guard let frame = try nextFrame() else { return nil }
                if let event = try deliver(frame.opcode, fin: frame.fin, frame.payload) { return event }
            }
        } catch {
            failure = error
            buffer = []
            message = []
            readIndex = 0
            throw error
        }
    }

    private func fail(_ code: WebSocketCloseCode, _ reason: String) -> WebSocketFailure {
        WebSocketFailure(code, reason)
    }

    /// One whole frame from the buffer, unmasked, or nil until it has all arrived.
    private mutating func nextFrame() throws(WebSocketFailure) -> (opcode: WebSocketOpcode, fin: Bool, payload: [UInt8])? {
        let available = buffer.count - readIndex
        guard available >= 2 else { return nil }
        let b0 = buffer[readIndex], b1 = buffer[readIndex + 1]
        let fin = b0 & 0x80 != 0
        guard b0 & 0x70 == 0 else { throw fail(.protocolError, "reserved bits set (no extension was agreed)") }
        guard let opcode = WebSocketOpcode(rawValue: b0 & 0x0F) else { throw fail(.protocolError, "unknown opcode \(b0 & 0x0F)") }
        let masked = b1 & 0x80 != 0
        guard masked == expectsMasked else {
            throw fail(.protocolError, expectsMasked ? "a client's frames must be masked" : "a server's frames must not be masked")
        }
        var header = 2
        var length: UInt64
        switch b1 & 0x7F {
        case 126:
            guard available >= 4 else { return nil }
            length = UInt64(buffer[readIndex + 2]) << 8 | UInt64(buffer[readIndex + 3])
            guard length >= 126 else { throw fail(.protocolError, "length not in its shortest form") }
            header = 4
        case 127:
            guard available >= 10 else { return nil }
            length = 0
            for i in 2..<10 { length = length << 8 | UInt64(buffer[readIndex + i]) }
            guard length >> 63 == 0 else { throw fail(.protocolError, "length with its top bit set") }
            guard length > 0xFFFF else { throw fail(.protocolError, "length not in its shortest form") }
            header = 10
        default:
            length = UInt64(b1 & 0x7F)
        }
        if opcode.isControl {
            guard fin else { throw fail(.protocolError, "a fragmented control frame") }
            guard length <= 125 else { throw fail(.protocolError, "a control frame longer than 125 bytes") }
        } else {
            switch (opcode, messageOpcode) {
            case (.continuation, nil): throw fail(.protocolError, "a continuation frame with no message to continue")
            case (.text, .some), (.binary, .some): throw fail(.protocolError, "a new message before the last one ended")
            default: break
            }
            guard length <= UInt64(max(0, maxMessageBytes - message.count)) else {
                throw fail(.messageTooBig, "a message larger than \(maxMessageBytes) bytes")
            }
        }
        let maskLength = masked ? 4 : 0
        let total = header + maskLength + Int(length)
        guard available >= total else { return nil }
        let start = readIndex + header + maskLength
        var payload = Array(buffer[start..<(start + Int(length))])
        if masked {
            let key = (buffer[readIndex + header], buffer[readIndex + header + 1], buffer[readIndex + header + 2], buffer[readIndex + header + 3])
            WebSocketParser.unmask(&payload, key: key)
        }
        readIndex += total
        compact()
        return (opcode, fin, payload)
    }

    /// Drops consumed input once it is most of the buffer, so the buffer stays near one frame.
    private mutating func compact() {
        if readIndex == buffer.count {
            buffer.removeAll(keepingCapacity: buffer.count <= 1 << 16)
            readIndex = 0
        } else if readIndex > 1 << 16, readIndex * 2 > buffer.count {
            buffer.removeFirst(readIndex)
            readIndex = 0
        }
    }

    /// XORs `payload` with the 4-byte masking key (RFC 6455 §5.3), eight bytes at a time.
    static func unmask(_ payload: inout [UInt8], key: (UInt8, UInt8, UInt8, UInt8)) {
        let keyBytes = [key.0, key.1, key.2, key.3]
        payload.withUnsafeMutableBytes { raw in
            let count = raw.count
            var word: UInt64 = 0
            for i in 0..<8 { word |= UInt64(keyBytes[i & 3]) << UInt64(8 * i) }
            let wordMask = UInt64(littleEndian: word)
            var i = 0
            while i + 8 <= count {
                let value = raw.loadUnaligned(fromByteOffset: i, as: UInt64.self)
                raw.storeBytes(of: value ^ wordMask, toByteOffset: i, as: UInt64.self)
                i += 8
            }
            while i < count {
                raw[i] ^= keyBytes[i & 3]
                i += 1
            }
        }
    }

    /// Turns a frame into an event, or nil while a fragmented message is still arriving.
    private mutating func deliver(_ opcode: WebSocketOpcode, fin: Bool, _ payload: [UInt8]) throws(WebSocketFailure) -> WebSocketEvent? {
        switch opcode {
        case .ping: return .ping(payload)
        case .pong: return .pong(payload)
        case .close:
            // Nothing after a close frame is read (RFC 6455 §5.5.1): drop what came with it.
            closed = true
            buffer = []
            readIndex = 0
            message = []
            if payload.isEmpty { return .close(code: nil, reason: "") }
            guard payload.count >= 2 else { throw fail(.protocolError, "a close frame with a one-byte code") }
            let code = WebSocketCloseCode(rawValue: UInt16(payload[0]) << 8 | UInt16(payload[1]))
            guard code.isValidOnWire else { throw fail(.protocolError, "close code \(code) may not be sent") }
            guard let reason = String(validating: payload[2...], as: UTF8.self) else {
                throw fail(.invalidPayload, "a close reason that is not UTF-8")
            }
            return .close(code: code, reason: reason)
        case .text, .binary, .continuation:
            if opcode != .continuation { messageOpcode = opcode }
            if fin && message.isEmpty {
                // The common case, one frame: no copy into `message`.
                let kind = messageOpcode
                messageOpcode = nil
                return try finish(kind, payload)
            }
            message.append(contentsOf: payload)
            guard fin else { return nil }
            let whole = message
            let kind = messageOpcode
            message = []
            messageOpcode = nil
            return try finish(kind, whole)
        }
    }

    private func finish(_ kind: WebSocketOpcode?, _ bytes: [UInt8]) throws(WebSocketFailure) -> WebSocketEvent {
        guard kind == .text else { return .binary(bytes) }
        guard String(validating: bytes, as: UTF8.self) != nil else { throw fail(.invalidPayload, "a text message that is not UTF-8") }
        return .text(bytes)
    }
}
