import Dispatch
import Glibc

/// A non-blocking UDP socket whose datagrams arrive through a Dispatch read
/// source on the queue given at creation.
///
/// Threading: `init` may run on any thread. Every other method must be called
/// on `queue` (checked with `dispatchPrecondition`), and `onDatagram` runs on
/// `queue`. Mutable state is touched only there, which is why the class can be
/// `@unchecked Sendable` without locks.
///
/// Lifetime: once started, the socket keeps itself alive (its read source
/// holds it) until `close()`. Call `close()` when done.
public final class UDPSocket: @unchecked Sendable {
    /// Largest datagram accepted; bigger than any IPv4/IPv6 UDP payload, so
    /// nothing is ever truncated.
    public static let maxDatagramSize = 65536

    /// Datagrams read per wakeup before yielding the queue to other work. The
    /// read source is level-triggered, so anything left fires it again.
    static let maxDatagramsPerWakeup = 256

    /// The serial queue that owns this socket's state and runs its callbacks.
    public let queue: DispatchQueue

    /// The bound address, with the port the kernel chose if bound to port 0.
    public let localAddress: SocketAddress

    private let descriptor: SocketDescriptor
    private var readSource: WatchedSource?
    private var onDatagram: (([UInt8], SocketAddress) -> Void)?
    private var receiveBuffer: UnsafeMutableRawBufferPointer?
    private var droppedCount = 0

    /// Opens a socket bound to `address`.
    ///
    /// - Parameters:
    ///   - reuseAddress: SO_REUSEADDR, so a restarted node can rebind at once.
    ///   - reusePort: SO_REUSEPORT, so several nodes on one host can bind the
    ///     same discovery port and each receive multicast sent to it. Every
    ///     socket sharing the port must set it, and be owned by the same user.
    ///   - broadcast: SO_BROADCAST, required to send to broadcast addresses.
    ///   - v6Only: IPV6_V6ONLY (IPv6 addresses only), so a socket on `[::]`
    ///     hears IPv6 alone and can share its port with an IPv4 socket on
    ///     `0.0.0.0` instead of hearing every IPv4 datagram a second time.
    public init(
        bind address: SocketAddress,
        queue: DispatchQueue,
        reuseAddress: Bool = true,
        reusePort: Bool = false,
        broadcast: Bool = false,
        v6Only: Bool = false
    ) throws(SocketError) {
        let fd = try SocketCalls.open(family: address.protocolFamily, type: SOCK_DGRAM)
        do throws(SocketError) {
            if v6Only, address.family == .ipv6 { try SocketCalls.setV6Only(fd) }
            if reuseAddress {
                try SocketCalls.setOption(fd, level: SOL_SOCKET, name: SO_REUSEADDR, value: Int32(1),
                                          call: "setsockopt(SO_REUSEADDR)")
            }
            if reusePort {
                try SocketCalls.setOption(fd, level: SOL_SOCKET, name: SO_REUSEPORT, value: Int32(1),
                                          call: "setsockopt(SO_REUSEPORT)")
            }
            if broadcast {
                try SocketCalls.setOption(fd, level: SOL_SOCKET, name: SO_BROADCAST, value: Int32(1),
                                          call: "setsockopt(SO_BROADCAST)")
            }
            try SocketCalls.bind(fd, to: address)
            localAddress = try SocketCalls.localAddress(fd)
        } catch {
            closeDescriptor(fd)
            throw error
        }
        self.queue = queue
        self.descriptor = SocketDescriptor(fd: fd, queue: queue)
    }

    deinit {
        receiveBuffer?.deallocate()
    }

    /// Whether `close()` has been called. Call on `queue`.
    public var isClosed: Bool {
        dispatchPrecondition(condition: .onQueue(queue))
        return descriptor.isClosed
    }

    /// Datagrams `send` dropped because the socket buffer was full. UDP may
    /// lose datagrams anyway, so dropping is preferred over queueing; this
    /// count makes the loss visible. Call on `queue`.
    public var droppedSendCount: Int {
        dispatchPrecondition(condition: .onQueue(queue))
        return droppedCount
    }

    /// Starts delivering datagrams to `onDatagram` on `queue`. Call on `queue`,
    /// at most once. Does nothing if the socket is already closed.
    public func start(onDatagram: @escaping ([UInt8], SocketAddress) -> Void) {
        dispatchPrecondition(condition: .onQueue(queue))
        precondition(readSource == nil, "UDPSocket.start called twice")
        guard !descriptor.isClosed else { return }
        self.onDatagram = onDatagram
        receiveBuffer = .allocate(byteCount: Self.maxDatagramSize, alignment: 16)
        let source = descriptor.makeReadSource { [self] in receiveAvailable() }
        readSource = source
        source.resume()
    }

    /// Reads datagrams until the socket is drained (EAGAIN), the per-wakeup
    /// limit is reached, or a callback closed the socket.
    private func receiveAvailable() {
        dispatchPrecondition(condition: .onQueue(queue))
        guard let buffer = receiveBuffer else { return }
        let fd = descriptor.fd
        for _ in 0..<Self.maxDatagramsPerWakeup {
            guard !descriptor.isClosed, let onDatagram else { return }
            var storage = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let count: Int
            do {
                count = try syscall("recvfrom") {
                    withUnsafeMutablePointer(to: &storage) {
                        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                            recvfrom(fd, buffer.baseAddress, buffer.count, 0, $0, &length)
                        }
                    }
                }
            } catch {
                if case .wouldBlock = error { return }
                // A pending socket error (e.g. from ICMP) is consumed by the
                // failed read; keep draining the datagrams behind it.
                continue
            }
            guard let sender = try? SocketAddress(storage: storage) else { continue }
            let datagram = [UInt8](UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
            onDatagram(datagram, sender)
        }
    }

    /// Sends one datagram without blocking. Call on `queue`.
    ///
    /// If the socket buffer is full the datagram is dropped and counted in
    /// `droppedSendCount` rather than queued: UDP is lossy anyway and callers
    /// (discovery, announcements) repeat themselves. Other failures throw,
    /// e.g. `.system(call: "sendto", errno: EMSGSIZE)`; sending after `close()`
    /// throws `.closed`.
    public func send(_ bytes: [UInt8], to address: SocketAddress) throws(SocketError) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard !descriptor.isClosed else { throw .closed }
        let fd = descriptor.fd
        do {
            _ = try syscall("sendto") {
                bytes.withUnsafeBytes { payload in
                    address.withSockAddr {
                        sendto(fd, payload.baseAddress, payload.count, Int32(MSG_NOSIGNAL), $0, $1)
                    }
                }
            }
        } catch {
            guard case .wouldBlock = error else { throw error }
            droppedCount += 1
        }
    }

    /// Stops delivery and closes the socket. Call on `queue`. Idempotent; no
    /// callback runs after it returns. The fd itself is closed once the read
    /// source has finished cancelling.
    public func close() {
        dispatchPrecondition(condition: .onQueue(queue))
        guard !descriptor.isClosed else { return }
        descriptor.close()
        readSource = nil
        onDatagram = nil
    }

    /// The raw descriptor for option calls in extensions; only valid while
    /// open. Call on `queue`.
    func openDescriptor() throws(SocketError) -> Int32 {
        dispatchPrecondition(condition: .onQueue(queue))
        guard !descriptor.isClosed else { throw .closed }
        return descriptor.fd
    }
}
