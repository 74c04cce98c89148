import Dispatch
import Glibc

/// One socket file descriptor and the Dispatch sources that watch it.
///
/// The descriptor is closed only after every source on it has finished
/// cancelling. Closing earlier would let the kernel hand the same number to a
/// new socket while Dispatch still has the old one registered, and events for
/// one socket would then be delivered to the other.
///
/// Sources are created lazily, so a socket that is never started owns none and
/// is closed directly (or in `deinit` if nobody called `close`). While sources
/// exist, their cancel handlers keep this object alive until they have run.
///
/// Confined to `queue`: every method must be called on it.
final class SocketDescriptor: @unchecked Sendable {
    let fd: Int32
    let queue: DispatchQueue
    /// True once `close()` was called; the fd may stay open a little longer
    /// while sources finish cancelling, but must not be used any more.
    private(set) var isClosed = false
    private var sources: [WatchedSource] = []
    private var sourcesNotYetCancelled = 0
    private var released = false

    init(fd: Int32, queue: DispatchQueue) {
        self.fd = fd
        self.queue = queue
    }

    deinit {
        // Only reachable with no live sources (their cancel handlers retain
        // us), so closing here cannot race Dispatch.
        if !released { closeDescriptor(fd) }
    }

    /// A read-readiness source, created suspended; resume it to start.
    func makeReadSource(handler: @escaping @Sendable () -> Void) -> WatchedSource {
        adopt(DispatchSource.makeReadSource(fileDescriptor: fd, queue: queue), handler: handler)
    }

    /// A write-readiness source, created suspended; resume it only while data
    /// is pending, since a socket is writable almost always and a running
    /// write source with nothing to write would spin.
    func makeWriteSource(handler: @escaping @Sendable () -> Void) -> WatchedSource {
        adopt(DispatchSource.makeWriteSource(fileDescriptor: fd, queue: queue), handler: handler)
    }

    private func adopt(_ source: any DispatchSourceProtocol, handler: @escaping @Sendable () -> Void) -> WatchedSource {
        dispatchPrecondition(condition: .onQueue(queue))
        precondition(!isClosed, "source requested for a closed socket")
        let watched = WatchedSource(source, queue: queue)
        watched.setHandlers(event: handler, cancel: { [self] in sourceFinishedCancelling() })
        sourcesNotYetCancelled += 1
        sources.append(watched)
        return watched
    }

    /// Cancels all sources and closes the fd once they are done. Idempotent.
    func close() {
        dispatchPrecondition(condition: .onQueue(queue))
        guard !isClosed else { return }
        isClosed = true
        if sourcesNotYetCancelled == 0 {
            release()
        } else {
            for source in sources { source.cancel() }
        }
        sources.removeAll()
    }

    private func sourceFinishedCancelling() {
        dispatchPrecondition(condition: .onQueue(queue))
        sourcesNotYetCancelled -= 1
        if sourcesNotYetCancelled == 0, isClosed { release() }
    }

    private func release() {
        guard !released else { return }
        released = true
        closeDescriptor(fd)
    }
}
