/// One thing a peer sent: a whole message (its fragments joined) or a control frame.
public enum WebSocketEvent: Equatable, Sendable {
    /// A text message, checked to be UTF-8.
    case text([UInt8])
    case binary([UInt8])
    case ping([UInt8])
    case pong([UInt8])
    /// The peer's close frame: its code (nil when the frame had none) and reason. Nothing
    /// after it is read.
    case close(code: WebSocketCloseCode?, reason: String)
}

/// The frame opcodes of RFC 6455 §5.2.
public enum WebSocketOpcode: UInt8, Sendable {
    case continuation = 0x0
    case text = 0x1
    case binary = 0x2
    case close = 0x8
    case ping = 0x9
    case pong = 0xA

    public var isControl: Bool { rawValue & 0x8 != 0 }
}
