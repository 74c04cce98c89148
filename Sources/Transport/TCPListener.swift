import Dispatch
import Glibc

/// A listening TCP socket that hands each accepted connection to a callback.
///
/// Threading: `init` may run on any thread; every other method must be called
/// on `queue` (checked), and `onAccept` runs on `queue`. Accepted connections
/// share the listener's queue.
///
/// Lifetime: once started, the listener keeps itself alive until `close()`.
public final class TCPListener: @unchecked Sendable {
    /// Connections accepted per wakeup before yielding the queue.
    static let maxAcceptsPerWakeup = 64

    /// How long accepting pauses when the process is out of descriptors. The
    /// read source is level-triggered, so without a pause it would spin on
    /// EMFILE until some descriptor is freed.
    static let descriptorExhaustionPause: DispatchTimeInterval = .milliseconds(100)

    /// The serial queue that owns this listener and its connections.
    public let queue: DispatchQueue

    /// The bound address; with port 0 this carries the port the kernel chose.
    public let localAddress: SocketAddress

    private let descriptor: SocketDescriptor
    private var acceptSource: WatchedSource?
    private var onAccept: ((TCPConnection) -> Void)?
    private var pauseTimer: (any Cancellable)?

    /// Binds and listens. SO_REUSEADDR is set so a restarted node can take
    /// its port back while old connections sit in TIME_WAIT.
    ///
    /// With `v6Only` (IPv6 addresses only) IPV6_V6ONLY is set, so a listener
    /// on `[::]` takes the IPv6 port alone and an IPv4 listener can hold the
    /// same port number on `0.0.0.0`.
    public init(bind address: SocketAddress, queue: DispatchQueue, backlog: Int32 = 128,
                v6Only: Bool = false) throws(SocketError) {
        let fd = try SocketCalls.open(family: address.protocolFamily, type: SOCK_STREAM)
        do throws(SocketError) {
            if v6Only, address.family == .ipv6 { try SocketCalls.setV6Only(fd) }
            try SocketCalls.setOption(fd, level: SOL_SOCKET, name: SO_REUSEADDR, value: Int32(1),
                                      call: "setsockopt(SO_REUSEADDR)")
            try SocketCalls.bind(fd, to: address)
            _ = try syscall("listen") { listen(fd, backlog) }
            localAddress = try SocketCalls.localAddress(fd)
        } catch {
            closeDescriptor(fd)
            throw error
        }
        self.queue = queue
        self.descriptor = SocketDescriptor(fd: fd, queue: queue)
    }

    /// Whether `close()` has been called. Call on `queue`.
    public var isClosed: Bool {
        dispatchPrecondition(condition: .onQueue(queue))
        return descriptor.isClosed
    }

    /// Starts accepting; each connection is non-blocking with TCP_NODELAY and
    /// not yet started (call its `start` to read). Call on `queue`, once.
    public func start(onAccept: @escaping (TCPConnection) -> Void) {
        dispatchPrecondition(condition: .onQueue(queue))
        precondition(acceptSource == nil, "TCPListener.start called twice")
        guard !descriptor.isClosed else { return }
        self.onAccept = onAccept
        let source = descriptor.makeReadSource { [self] in acceptAvailable() }
        acceptSource = source
        source.resume()
    }

    private func acceptAvailable() {
        dispatchPrecondition(condition: .onQueue(queue))
        let listenFD = descriptor.fd
        for _ in 0..<Self.maxAcceptsPerWakeup {
            guard !descriptor.isClosed, let onAccept else { return }
            var storage = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let fd: Int32
            do throws(SocketError) {
                fd = try syscall("accept") {
                    withUnsafeMutablePointer(to: &storage) {
                        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { accept(listenFD, $0, &length) }
                    }
                }
            } catch {
                switch error.errnoCode {
                case EAGAIN:
                    return
                case ECONNABORTED, EPROTO:
                    continue  // that client gave up while queued; try the next
                case EMFILE, ENFILE, ENOBUFS, ENOMEM:
                    pauseAccepting()
                    return
                default:
                    return
                }
            }
            guard let connection = Self.adopt(fd, peer: storage, queue: queue) else { continue }
            onAccept(connection)
        }
    }

    /// Wraps an accepted descriptor, or closes it if its addresses cannot be
    /// read (the peer may already be gone).
    private static func adopt(_ fd: Int32, peer: sockaddr_storage, queue: DispatchQueue) -> TCPConnection? {
        do throws(SocketError) {
            try SocketCalls.makeNonBlockingAndCloseOnExec(fd)
            try? SocketCalls.setNoDelay(fd)
            let remote = try SocketAddress(storage: peer)
            let local = try SocketCalls.localAddress(fd)
            return TCPConnection(adopting: fd, queue: queue, localAddress: local, remoteAddress: remote)
        } catch {
            closeDescriptor(fd)
            return nil
        }
    }

    private func pauseAccepting() {
        guard let acceptSource, pauseTimer == nil else { return }
        acceptSource.suspend()
        pauseTimer = schedule(after: Self.descriptorExhaustionPause, on: queue) { [self] in
            pauseTimer = nil
            guard !descriptor.isClosed else { return }
            acceptSource.resume()
        }
    }

    /// Stops accepting and closes the listening socket. Call on `queue`.
    /// Idempotent; `onAccept` never runs after it returns. Connections already
    /// accepted are unaffected.
    public func close() {
        dispatchPrecondition(condition: .onQueue(queue))
        guard !descriptor.isClosed else { return }
        pauseTimer?.cancel()
        pauseTimer = nil
        descriptor.close()
        acceptSource = nil
        onAccept = nil
    }
}
