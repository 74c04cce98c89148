import Dispatch
import Foundation
import HTTP
import Store
import Transport
import Tree

/// Writes a large value to a client while it is read: the body of a GET, or the data of an event
/// stream's first `put`. The value comes from a `TreeSnapshot` taken when the request was
/// answered, so it is the value of that moment even though the node goes on applying writes
/// meanwhile; pieces are read on a queue of the read's own and written on the node's, the next
/// piece only once the client has taken the last. Memory is a piece or two, whatever the size
/// of the value, and the node's queue is never held for more than a piece. The live values
/// (typing flags, statuses, receipts) of that moment are shown over it, as on every read.
///
/// Why: opening a chat on a year of history read `/conversations` whole (hundreds of MB of
/// JSON) into memory, as a tree of values and then as text, and the node kept most of it.
final class StreamedRead {
    /// Bytes read and written at a time.
    static let pieceSize = 1 << 17
    /// A client that takes no piece for this long (the API's idle time, 120 s by default) is
    /// closed: while a read is open its snapshot holds the WAL back from checkpoints, so it must
    /// not last at a client's pleasure.
    private let stallLimit: DispatchTimeInterval
    /// Pieces the client has taken so far; the stall check compares it.
    private var piecesTaken = 0

    private let connection: TCPConnection
    private let nodeQueue: DispatchQueue
    private let readQueue = DispatchQueue(label: "lanchat.api.streamed-read")
    /// Confined to `readQueue` once started.
    private let snapshot: TreeSnapshot
    private let path: Path
    /// The live values shown over the snapshot, taken with it (`TreeStream`).
    private let live: [(Path, JSONValue)]?
    private let chunked: Bool

    /// Reads open at once in this process, at most `maxOpen`: each holds a snapshot (a
    /// connection, its cache, the WAL) and a piece or two, so a client opening hundreds of large
    /// reads at once gets 429 for those beyond the limit rather than making the node hold them all.
    static let maxOpen = 32
    static let open = ReadCount()

    /// A read of `path` in `snapshot`, to be written to `connection` (whose queue is
    /// `nodeQueue`), each piece as an HTTP chunk when `chunked`, closed when the client takes
    /// nothing for `stallSeconds`; nil when `maxOpen` reads are open already.
    init?(connection: TCPConnection, nodeQueue: DispatchQueue, snapshot: TreeSnapshot, path: Path, live: [(Path, JSONValue)]?,
          chunked: Bool, stallSeconds: Double) {
        guard StreamedRead.open.acquire(limit: StreamedRead.maxOpen) else { return nil }
        stallLimit = .milliseconds(max(1, Int(stallSeconds * 1000)))
        self.connection = connection
        self.nodeQueue = nodeQueue
        self.snapshot = snapshot
        self.path = path
        self.live = live
        self.chunked = chunked
    }

    deinit { StreamedRead.open.release() }

    /// The response to a large read refused because `maxOpen` reads are open.
    static func refusal() -> HTTPResponse {
        APIResponse.error(429, "Too many large reads at once; try again when one has finished")
    }

    /// Works out the value's ETag with a first pass over the snapshot (nothing kept but the
    /// hash), then calls `body` on the node's queue with it.
    func etag(_ body: @escaping (String) -> Void) {
        let read = UncheckedSendable(self)
        let done = UncheckedSendable(body)
        readQueue.async {
            var hasher = FirebaseETagHasher()
            let stream = read.value.snapshot.stream(read.value.path, live: read.value.live)
            var failed = false
            do {
                while let piece = try stream.next(size: StreamedRead.pieceSize) { hasher.update(piece) }
            } catch {
                failed = true
            }
            let tag = hasher.etag
            let failedRead = failed
            read.value.nodeQueue.async {
                if failedRead { read.value.connection.close() } else { done.value(tag) }
            }
        }
    }

    /// Writes `prefix`, the value, then `suffix` (framed as chunks when `chunked`), then calls
    /// `finished` on the node's queue. A read that fails midway closes the connection: the
    /// client sees a truncated response, never a wrong one.
    func send(prefix: [UInt8], suffix: [UInt8], finished: @escaping () -> Void) {
        dispatchPrecondition(condition: .onQueue(nodeQueue))
        write(prefix)
        let stream = snapshot.stream(path, live: live)
        pump(stream, suffix: suffix, finished: UncheckedSendable(finished))
    }

    private func write(_ bytes: [UInt8]) {
        connection.write(chunked ? HTTPChunkedWriter.chunk(bytes) : bytes)
    }

    /// Reads the next piece on the read's queue and writes it on the node's, then waits for
    /// the client to take it.
    private func pump(_ stream: TreeStream, suffix: [UInt8], finished: UncheckedSendable<() -> Void>) {
        let read = UncheckedSendable(self)
        let source = UncheckedSendable(stream)
        readQueue.async {
            let piece: [UInt8]?
            do {
                piece = try source.value.next(size: StreamedRead.pieceSize)
            } catch {
                read.value.nodeQueue.async { read.value.connection.close() }
                return
            }
            if piece == nil { read.value.snapshot.close() }
            read.value.nodeQueue.async {
                let this = read.value
                guard !this.connection.isClosed else { return }
                guard let piece else {
                    this.write(suffix)
                    finished.value()
                    return
                }
                this.write(piece)
                let taken = this.piecesTaken
                this.connection.whenDrained {
                    this.piecesTaken += 1
                    this.pump(source.value, suffix: suffix, finished: finished)
                }
                let weak = WeakReference(this)
                this.nodeQueue.asyncAfter(deadline: .now() + this.stallLimit) {
                    guard let read = weak.value, read.piecesTaken == taken, !read.connection.isClosed else { return }
                    read.connection.close()
                }
            }
        }
    }
}

/// A reference that does not keep its object alive, to hand to a timer.
private final class WeakReference<T: AnyObject>: @unchecked Sendable {
    weak var value: T?
    init(_ value: T) { self.value = value }
}

/// A count shared by every queue, for `StreamedRead.open`.
final class ReadCount: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0

    func acquire(limit: Int) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        guard count < limit else { return false }
        count += 1
        return true
    }

    func release() {
        lock.lock()
        count -= 1
        lock.unlock()
    }
}
