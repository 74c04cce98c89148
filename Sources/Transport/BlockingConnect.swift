#if canImport(Glibc)
import Glibc
#endif

/// A blocking TCP connection for short-lived command-line clients (the CLI asking its node, test
/// and benchmark clients), which wait for one answer and need no Dispatch source. Sends and
/// receives time out after `timeoutSeconds`, so a stuck peer cannot hang the caller.
public enum BlockingSocket {
    /// Connects to `address` and returns the file descriptor; the caller closes it.
    public static func connect(to address: SocketAddress, timeoutSeconds: Int,
                               receiveBuffer: Int32? = nil, noDelay: Bool = false) throws(SocketError) -> Int32 {
        let fd = try syscall("socket") { socket(address.protocolFamily, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0) }
        do throws(SocketError) {
            let timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
            try SocketCalls.setOption(fd, level: SOL_SOCKET, name: SO_RCVTIMEO, value: timeout, call: "setsockopt(SO_RCVTIMEO)")
            try SocketCalls.setOption(fd, level: SOL_SOCKET, name: SO_SNDTIMEO, value: timeout, call: "setsockopt(SO_SNDTIMEO)")
            if let receiveBuffer {
                try SocketCalls.setOption(fd, level: SOL_SOCKET, name: SO_RCVBUF, value: receiveBuffer, call: "setsockopt(SO_RCVBUF)")
            }
            if noDelay {
                try SocketCalls.setOption(fd, level: Int32(IPPROTO_TCP), name: TCP_NODELAY, value: Int32(1), call: "setsockopt(TCP_NODELAY)")
            }
            _ = try syscall("connect") { address.withSockAddr { Glibc.connect(fd, $0, $1) } }
            return fd
        } catch {
            Glibc.close(fd)
            throw error
        }
    }
}
