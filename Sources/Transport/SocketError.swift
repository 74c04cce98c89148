import Glibc

/// Why a socket operation did not do what was asked.
///
/// Errors from the kernel keep both the `errno` and the name of the call that
/// produced it, because "connection refused" alone does not say whether it was
/// the connect, a later send or a read that saw it.
public enum SocketError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The call would have blocked (EAGAIN/EWOULDBLOCK). On a non-blocking
    /// socket this means "wait for the next readiness event", not failure.
    case wouldBlock(call: String)

    /// The named system call failed with this `errno` value.
    case system(call: String, errno: Int32)

    /// A connection attempt did not complete within the caller's timeout.
    case timedOut

    /// The text is not a numeric IPv4/IPv6 address (or `HOST:PORT` pair).
    case invalidAddress(String)

    /// The request is valid in general but not supported here (for example
    /// an IPv6 group given to the IPv4-only multicast calls, or an address
    /// family other than IPv4/IPv6).
    case unsupported(String)

    /// The socket was already closed with `close()`.
    case closed

    /// The `errno` carried by this error, if it came from the kernel.
    public var errnoCode: Int32? {
        switch self {
        case .wouldBlock: return EAGAIN
        case .system(_, let code): return code
        case .timedOut, .invalidAddress, .unsupported, .closed: return nil
        }
    }

    /// One line naming the failed call and the reason.
    public var description: String {
        switch self {
        case .wouldBlock(let call):
            return "\(call): would block"
        case .system(let call, let code):
            return "\(call): \(String(cString: strerror(code))) (errno \(code))"
        case .timedOut:
            return "connect: timed out"
        case .invalidAddress(let text):
            return "invalid socket address \"\(text)\""
        case .unsupported(let what):
            return "unsupported: \(what)"
        case .closed:
            return "socket is closed"
        }
    }
}
