import Dispatch
import Glibc

extension TCPConnection {
    /// Opens a connection without blocking. May be called from any thread;
    /// `completion` always runs later on `queue`, exactly once, and the new
    /// connection belongs to `queue`.
    ///
    /// Failures are typed: a port with nothing listening gives
    /// `.system(call: "connect", errno: ECONNREFUSED)`, and no answer within
    /// `timeout` gives `.timedOut` (pass `.never` to wait for the kernel's own
    /// limit).
    public static func connect(
        to address: SocketAddress,
        queue: DispatchQueue,
        timeout: DispatchTimeInterval,
        completion: @escaping (Result<TCPConnection, SocketError>) -> Void
    ) {
        let attempt = ConnectAttempt(target: address, queue: queue, completion: completion)
        queue.async { attempt.begin(timeout: timeout) }
    }
}

/// One in-flight non-blocking connect: waits for writability (which is how
/// the kernel reports a finished connect), reads SO_ERROR for the outcome, and
/// races that against a timeout.
///
/// Confined to `queue`. The write source and the timer both hold this object
/// until it finishes, so callers need not keep it.
final class ConnectAttempt: @unchecked Sendable {
    private let target: SocketAddress
    private let queue: DispatchQueue
    private var completion: ((Result<TCPConnection, SocketError>) -> Void)?
    private var fd: Int32 = -1
    private var writeSource: WatchedSource?
    private var timer: (any Cancellable)?
    private var outcome: Result<Void, SocketError>?

    init(target: SocketAddress, queue: DispatchQueue, completion: @escaping (Result<TCPConnection, SocketError>) -> Void) {
        self.target = target
        self.queue = queue
        self.completion = completion
    }

    func begin(timeout: DispatchTimeInterval) {
        dispatchPrecondition(condition: .onQueue(queue))
        do throws(SocketError) {
            fd = try SocketCalls.open(family: target.protocolFamily, type: SOCK_STREAM)
            let fd = fd
            let target = target
            _ = try syscall("connect") { target.withSockAddr { Glibc.connect(fd, $0, $1) } }
            // Connected at once (possible on loopback).
            finish(.success(()))
            return
        } catch {
            // EINPROGRESS is the normal non-blocking answer; EALREADY can follow
            // an EINTR retry of the same connect.
            guard fd >= 0, error.errnoCode == EINPROGRESS || error.errnoCode == EALREADY else {
                finish(.failure(error))
                return
            }
        }
        let source = WatchedSource(DispatchSource.makeWriteSource(fileDescriptor: fd, queue: queue), queue: queue)
        writeSource = source
        source.setHandlers(
            event: { [self] in checkOutcome() },
            cancel: { [self] in deliver() })
        source.resume()
        if case .never = timeout { return }
        timer = schedule(after: timeout, on: queue) { [self] in finish(.failure(.timedOut)) }
    }

    /// The socket became writable: the connect finished one way or the other.
    private func checkOutcome() {
        do throws(SocketError) {
            let code = try SocketCalls.intOption(fd, level: SOL_SOCKET, name: SO_ERROR, call: "getsockopt(SO_ERROR)")
            finish(code == 0 ? .success(()) : .failure(.system(call: "connect", errno: code)))
        } catch {
            finish(.failure(error))
        }
    }

    /// Records the first outcome and cancels the rest. With a write source the
    /// result is delivered from its cancel handler, so the descriptor is handed
    /// on (or closed) only once Dispatch has stopped watching it.
    private func finish(_ result: Result<Void, SocketError>) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard outcome == nil else { return }
        outcome = result
        timer?.cancel()
        timer = nil
        if let writeSource {
            writeSource.cancel()
        } else {
            deliver()
        }
    }

    private func deliver() {
        dispatchPrecondition(condition: .onQueue(queue))
        guard let completion, let outcome else { return }
        self.completion = nil
        writeSource = nil
        switch outcome {
        case .success:
            do throws(SocketError) {
                try? SocketCalls.setNoDelay(fd)
                let local = try SocketCalls.localAddress(fd)
                let remote = (try? SocketCalls.remoteAddress(fd)) ?? target
                completion(.success(TCPConnection(adopting: fd, queue: queue, localAddress: local, remoteAddress: remote)))
            } catch {
                closeDescriptor(fd)
                completion(.failure(error))
            }
        case .failure(let error):
            if fd >= 0 { closeDescriptor(fd) }
            completion(.failure(error))
        }
    }
}
