import Glibc

/// Runs one system call, retrying when a signal interrupted it (EINTR), and
/// turns a `-1` result into a typed `SocketError` named after `name`.
///
/// Every socket call in this module goes through here so that EINTR handling
/// and errno capture live in one place: `errno` is read immediately after the
/// call, before anything else can overwrite it. EAGAIN/EWOULDBLOCK become
/// `.wouldBlock`, which callers on non-blocking sockets treat as "not now"
/// rather than as an error.
///
/// Do not use this for `close(2)`: see `closeDescriptor(_:)`.
public func syscall<T: FixedWidthInteger>(
    _ name: String,
    _ body: () -> T
) throws(SocketError) -> T {
    while true {
        let result = body()
        // Socket calls signal failure with -1 and never return other negatives.
        if result >= (0 as T) { return result }
        let code = errno
        if code == EINTR { continue }
        if code == EAGAIN || code == EWOULDBLOCK { throw .wouldBlock(call: name) }
        throw .system(call: name, errno: code)
    }
}

/// Closes a file descriptor exactly once, without retrying on EINTR.
///
/// On Linux the descriptor is released even when `close` reports EINTR, so a
/// retry could close an unrelated descriptor that another thread has just been
/// given the same number. Errors are ignored: there is nothing useful a caller
/// can do about a failed close of a socket.
func closeDescriptor(_ fd: Int32) {
    _ = Glibc.close(fd)
}
