/// Input the Realtime Database protocol refuses. `status` is what a request's answer says
/// (`{"s": status, "d": message}`), in the vocabulary the Firebase SDKs understand.
public struct RealtimeError: Error, Equatable, Sendable, CustomStringConvertible {
    public let status: String
    public let message: String

    public init(_ status: String, _ message: String) {
        self.status = status
        self.message = message
    }

    /// A request whose arguments are malformed (a path, a query, a value of the wrong type).
    public static func invalidArgs(_ message: String) -> RealtimeError { RealtimeError("invalid_args", message) }

    public var description: String { "\(status): \(message)" }
}
