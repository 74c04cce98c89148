import Dispatch
import Glibc

/// A non-blocking TCP connection: reads arrive through a Dispatch read source,
/// writes are buffered and flushed through a write source that runs only
/// while bytes are pending.
///
/// Threading: every method must be called on `queue` (checked with
/// `dispatchPrecondition`), and `onRead`/`onClose` run on `queue`. Mutable
/// state is touched only there, which is why the class can be
/// `@unchecked Sendable` without locks. `connect(to:...)` is the exception: it
/// may be called from any thread.
///
/// Lifetime: once started, the connection keeps itself alive until it closes,
/// by `close()`, end of stream or error. `onClose` runs exactly once for a
/// started connection, and no callback runs after it.
public final class TCPConnection: @unchecked Sendable {
    /// Size of the read buffer and so the largest chunk given to `onRead`.
    public static let readChunkSize = 64 * 1024

    /// Reads per wakeup before yielding the queue; the level-triggered read
    /// source fires again for whatever is left.
    static let maxReadsPerWakeup = 16

    /// The serial queue that owns this connection and runs its callbacks.
    public let queue: DispatchQueue
    /// The peer's address.
    public let remoteAddress: SocketAddress
    /// This end's address.
    public let localAddress: SocketAddress

    private let descriptor: SocketDescriptor
    private var readSource: WatchedSource?
    private var writeSource: WatchedSource?
    private var readBuffer: UnsafeMutableRawBufferPointer?
    private var outgoing = OutgoingBuffer()
    /// Called with each read, in the read buffer (valid only during the call).
    private var onRead: ((UnsafeRawBufferPointer) -> Void)?
    private var onClose: ((SocketError?) -> Void)?
    /// Waiting for every queued byte to reach the kernel (`whenDrained`).
    private var onDrained: [() -> Void] = []
    private var isStarted = false
    private var isReadingPaused = false
    private var isShutdownRequested = false
    private var isWriteSideShut = false
    /// An error that closed the connection before `start`, reported to
    /// `onClose` when `start` is called so it is not lost.
    private var closeBeforeStart: SocketError??

    init(adopting fd: Int32, queue: DispatchQueue, localAddress: SocketAddress, remoteAddress: SocketAddress) {
        self.queue = queue
        self.localAddress = localAddress
        self.remoteAddress = remoteAddress
        self.descriptor = SocketDescriptor(fd: fd, queue: queue)
    }

    deinit {
        readBuffer?.deallocate()
    }

    /// Whether the connection has closed, for any reason. Call on `queue`.
    public var isClosed: Bool {
        dispatchPrecondition(condition: .onQueue(queue))
        return descriptor.isClosed
    }

    /// Bytes written but not yet taken by the kernel. Callers producing lots
    /// of data should wait for this to fall before writing more. Call on `queue`.
    public var pendingWriteBytes: Int {
        dispatchPrecondition(condition: .onQueue(queue))
        return outgoing.count
    }

    /// Starts reading. Call on `queue`, once.
    ///
    /// - Parameters:
    ///   - onRead: each chunk read, at most `readChunkSize` bytes.
    ///   - onClose: called exactly once: `nil` for end of stream or `close()`,
    ///     the error otherwise. If the connection already failed before
    ///     `start`, it is called right away with that error.
    public func start(onRead: @escaping ([UInt8]) -> Void, onClose: @escaping (SocketError?) -> Void) {
        start(onReadBuffer: { onRead([UInt8]($0)) }, onClose: onClose)
    }

    /// `start(onRead:onClose:)` for a reader that copies what it reads where it needs it (a
    /// session's frame buffer): `onReadBuffer` gets the bytes in the connection's read buffer,
    /// valid only during the call, so they are not first copied into an array of their own.
    public func start(onReadBuffer onRead: @escaping (UnsafeRawBufferPointer) -> Void, onClose: @escaping (SocketError?) -> Void) {
        dispatchPrecondition(condition: .onQueue(queue))
        precondition(!isStarted, "TCPConnection.start called twice")
        isStarted = true
        guard !descriptor.isClosed else {
            if case .some(let reason) = closeBeforeStart {
                closeBeforeStart = nil
                onClose(reason)
            }
            return
        }
        self.onRead = onRead
        self.onClose = onClose
        readBuffer = .allocate(byteCount: Self.readChunkSize, alignment: 16)
        let source = descriptor.makeReadSource { [self] in readAvailable() }
        readSource = source
        if !isReadingPaused { source.resume() }
    }

    /// Stops reading until `resumeReading()`, so a slow consumer pushes back
    /// on the peer through TCP flow control. Call on `queue`.
    public func pauseReading() {
        dispatchPrecondition(condition: .onQueue(queue))
        isReadingPaused = true
        readSource?.suspend()
    }

    /// Undoes `pauseReading()`. Call on `queue`.
    public func resumeReading() {
        dispatchPrecondition(condition: .onQueue(queue))
        isReadingPaused = false
        guard !descriptor.isClosed else { return }
        readSource?.resume()
    }

    private func readAvailable() {
        dispatchPrecondition(condition: .onQueue(queue))
        guard let buffer = readBuffer else { return }
        let fd = descriptor.fd
        for _ in 0..<Self.maxReadsPerWakeup {
            guard !descriptor.isClosed, !isReadingPaused, let onRead else { return }
            let count: Int
            do {
                count = try syscall("recv") { recv(fd, buffer.baseAddress, buffer.count, 0) }
            } catch {
                if case .wouldBlock = error { return }
                finish(error)
                return
            }
            if count == 0 {
                finish(nil)
                return
            }
            onRead(UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
        }
    }

    /// Queues `bytes` and sends as much as the kernel takes now; the rest goes
    /// out as the socket becomes writable. Call on `queue`.
    ///
    /// Never blocks and never fails directly: a send error closes the
    /// connection and is reported through `onClose`. Writes after `close()` or
    /// `shutdownAfterWrites()` are ignored.
    public func write(_ bytes: [UInt8]) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard !descriptor.isClosed, !isShutdownRequested, !bytes.isEmpty else { return }
        let wasIdle = outgoing.isEmpty
        outgoing.append(bytes)
        // With bytes already pending the write source is armed and the kernel
        // buffer was full a moment ago; trying now would only hit EAGAIN.
        if wasIdle { flush() }
    }

    /// Calls `body` on `queue` once every byte written so far has been taken by the kernel: at
    /// once if none is pending. Never after the connection closed. Call on `queue`.
    ///
    /// For a writer that produces output a part at a time (a peer's chunk requests): it makes
    /// the next part only when the peer has taken the last, so the output never piles up here.
    public func whenDrained(_ body: @escaping () -> Void) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard !descriptor.isClosed else { return }
        if outgoing.isEmpty { body() } else { onDrained.append(body) }
    }

    /// Closes the sending direction once everything written so far is sent,
    /// so the peer reads end of stream after the last byte. Reading continues
    /// until the peer closes too. Call on `queue`.
    public func shutdownAfterWrites() {
        dispatchPrecondition(condition: .onQueue(queue))
        guard !descriptor.isClosed, !isShutdownRequested else { return }
        isShutdownRequested = true
        if outgoing.isEmpty { shutdownWriteSide() }
    }

    /// Sends until the buffer is empty or the kernel pushes back, then arms or
    /// disarms the write source accordingly.
    private func flush() {
        dispatchPrecondition(condition: .onQueue(queue))
        let fd = descriptor.fd
        while !descriptor.isClosed, !outgoing.isEmpty {
            let sent: Int
            do {
                sent = try syscall("send") {
                    outgoing.withFirstChunk { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } ?? 0
                }
            } catch {
                if case .wouldBlock = error {
                    armWriteSource()
                } else {
                    finish(error)
                }
                return
            }
            outgoing.consume(sent)
        }
        guard !descriptor.isClosed else { return }
        writeSource?.suspend()
        if isShutdownRequested { shutdownWriteSide() }
        let drained = onDrained
        onDrained = []
        for body in drained where !descriptor.isClosed { body() }
    }

    private func armWriteSource() {
        if writeSource == nil {
            writeSource = descriptor.makeWriteSource { [self] in flush() }
        }
        writeSource?.resume()
    }

    private func shutdownWriteSide() {
        guard !isWriteSideShut else { return }
        isWriteSideShut = true
        let fd = descriptor.fd
        do {
            _ = try syscall("shutdown") { shutdown(fd, Int32(SHUT_WR)) }
        } catch {
            finish(error)
        }
    }

    /// Closes at once, discarding unsent bytes, and calls `onClose(nil)` if it
    /// has not been called yet. Call on `queue`. Idempotent; no callback runs
    /// after it returns.
    public func close() {
        dispatchPrecondition(condition: .onQueue(queue))
        finish(nil)
    }

    /// The single path to closed: cancels sources (the fd is closed when they
    /// are done), drops buffers, and reports `reason` exactly once.
    private func finish(_ reason: SocketError?) {
        guard !descriptor.isClosed else { return }
        descriptor.close()
        readSource = nil
        writeSource = nil
        outgoing.removeAll()
        onDrained = []
        let callback = onClose
        onRead = nil
        onClose = nil
        if !isStarted, reason != nil {
            closeBeforeStart = .some(reason)
        }
        callback?(reason)
    }
}
