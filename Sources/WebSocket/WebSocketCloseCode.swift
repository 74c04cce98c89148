/// The status codes of a close frame (RFC 6455 §7.4) that this codec sends or accepts.
public struct WebSocketCloseCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    public static let normal = WebSocketCloseCode(rawValue: 1000)
    public static let goingAway = WebSocketCloseCode(rawValue: 1001)
    public static let protocolError = WebSocketCloseCode(rawValue: 1002)
    public static let unsupportedData = WebSocketCloseCode(rawValue: 1003)
    public static let invalidPayload = WebSocketCloseCode(rawValue: 1007)
    public static let policyViolation = WebSocketCloseCode(rawValue: 1008)
    public static let messageTooBig = WebSocketCloseCode(rawValue: 1009)
    public static let internalError = WebSocketCloseCode(rawValue: 1011)

    /// Whether a peer may put this code in a close frame: 1004, 1005, 1006 and 1015 are reserved
    /// for reporting (never sent), codes below 1000 and from 1016 to 2999 are unassigned, and
    /// 5000 and up do not exist.
    public var isValidOnWire: Bool {
        switch rawValue {
        case 1000...1003, 1007...1014, 3000...4999: return true
        default: return false
        }
    }

    public var description: String { String(rawValue) }
}

/// Why the codec gave up on a connection: the close code to send and a short reason for it.
public struct WebSocketFailure: Error, Equatable, Sendable {
    public let code: WebSocketCloseCode
    public let reason: String

    public init(_ code: WebSocketCloseCode, _ reason: String) {
        self.code = code
        self.reason = reason
    }
}
