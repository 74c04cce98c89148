/// Frames to send. A server's frames are unmasked (RFC 6455 §5.1); a client's carry the
/// masking key given (tests play the client).
public enum WebSocketFrameWriter {
    /// One frame: FIN set unless `fin` is false, the shortest length encoding, then the payload
    /// (masked with `mask` when one is given).
    public static func frame(_ opcode: WebSocketOpcode, _ payload: some Collection<UInt8>, fin: Bool = true, mask: [UInt8]? = nil) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(payload.count + 14)
        out.append((fin ? 0x80 : 0) | opcode.rawValue)
        let maskBit: UInt8 = mask == nil ? 0 : 0x80
        let count = payload.count
        if count < 126 {
            out.append(maskBit | UInt8(count))
        } else if count <= 0xFFFF {
            out.append(maskBit | 126)
            out.append(UInt8(count >> 8))
            out.append(UInt8(count & 0xFF))
        } else {
            out.append(maskBit | 127)
            for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8((UInt64(count) >> UInt64(shift)) & 0xFF)) }
        }
        if let mask {
            precondition(mask.count == 4, "a masking key is 4 bytes")
            out.append(contentsOf: mask)
            for (i, byte) in payload.enumerated() { out.append(byte ^ mask[i & 3]) }
        } else {
            out.append(contentsOf: payload)
        }
        return out
    }

    /// A text message in one frame.
    public static func text(_ text: String) -> [UInt8] { frame(.text, Array(text.utf8)) }

    /// A close frame with `code` and a reason cut to fit the 125-byte control payload, at a
    /// character boundary so it stays UTF-8.
    public static func close(_ code: WebSocketCloseCode, reason: String = "") -> [UInt8] {
        var payload: [UInt8] = [UInt8(code.rawValue >> 8), UInt8(code.rawValue & 0xFF)]
        var reasonBytes: [UInt8] = []
        for scalar in reason.unicodeScalars {
            let bytes = Array(String(scalar).utf8)
            guard reasonBytes.count + bytes.count <= 123 else { break }
            reasonBytes += bytes
        }
        payload += reasonBytes
        return frame(.close, payload)
    }
}
