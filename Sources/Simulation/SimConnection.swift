import Dispatch
import Node
import Transport

/// One end of a simulated stream connection, with TCP's behaviour as a node meets it: bytes
/// arrive in order, at most `window` bytes are in the network or unread at the far end (so a
/// peer that stops reading makes `pendingWriteBytes` grow here), reads come in parts of at most
/// 64 KiB, across a partition bytes wait (retransmission) until it heals, and closing delivers
/// end of stream after the bytes already sent.
final class SimConnection: StreamConnection, @unchecked Sendable {
    /// Bytes in the network plus unread at the receiver (the two kernels' buffers).
    static let window = 1 << 20
    static let segment = 64 * 1024
    /// Reads per turn before the queue is yielded, as `TCPConnection` does.
    static let readsPerTurn = 16

    let fabric: Fabric
    let host: Int
    let id: Int
    let localAddress: SocketAddress
    let remoteAddress: SocketAddress
    let queue: DispatchQueue
    /// The far end (weak: the two ends would otherwise keep each other alive after both closed;
    /// nil once the far end is gone or this end is abandoned).
    weak var peer: SimConnection?

    private var sendQueue: [[UInt8]] = []
    private var sendOffset = 0
    private(set) var pendingWriteBytes = 0
    /// Bytes sent and not yet read by the far end.
    private var unacknowledged = 0
    /// Segments on the way here, in order; `nil` bytes is end of stream.
    private var transit: [(due: UInt64, bytes: [UInt8]?)] = []
    /// When the last segment toward this end leaves the sender's link.
    var linkFreeAt: UInt64 = 0
    private var inbox: [[UInt8]] = []
    private var inboxEnded = false
    private var readScheduled = false
    private var paused = false
    private var started = false
    private(set) var isClosed = false
    private var onRead: ((UnsafeRawBufferPointer) -> Void)?
    private var onClose: ((SocketError?) -> Void)?
    private var drainWaiters: [() -> Void] = []
    /// Bytes queued here when the far end's process stalled (checked while it stays stalled).
    var queuedWhenFarEndStalled: Int?

    init(fabric: Fabric, host: Int, id: Int, local: SocketAddress, remote: SocketAddress, queue: DispatchQueue) {
        self.fabric = fabric
        self.host = host
        self.id = id
        localAddress = local
        remoteAddress = remote
        self.queue = queue
        epoch = fabric.hosts[host].epoch
    }

    /// The incarnation of the host's node this end belongs to.
    let epoch: Int
    private var retryScheduled = false

    func start(onReadBuffer: @escaping (UnsafeRawBufferPointer) -> Void, onClose: @escaping (SocketError?) -> Void) {
        started = true
        if isClosed {
            onClose(nil)
            return
        }
        onRead = onReadBuffer
        self.onClose = onClose
        scheduleRead()
    }

    func write(_ bytes: [UInt8]) {
        guard !isClosed, !bytes.isEmpty else { return }
        sendQueue.append(bytes)
        pendingWriteBytes += bytes.count
        pump()
    }

    func pauseReading() { paused = true }

    func resumeReading() {
        paused = false
        scheduleRead()
    }

    func whenDrained(_ body: @escaping () -> Void) {
        guard !isClosed else { return }
        if pendingWriteBytes == 0 { body() } else { drainWaiters.append(body) }
    }

    func close() {
        guard !isClosed else { return }
        sendFin()
        finish(nil)
    }

    // MARK: Sending

    /// Moves queued bytes into the network while the window has room.
    private func pump() {
        guard let peer, !isClosed else { return }
        while pendingWriteBytes > 0, unacknowledged < Self.window {
            let room = min(Self.segment, Self.window - unacknowledged)
            var part = [UInt8]()
            while part.count < room, !sendQueue.isEmpty {
                let first = sendQueue[0]
                let take = min(room - part.count, first.count - sendOffset)
                part += first[sendOffset..<(sendOffset + take)]
                sendOffset += take
                if sendOffset == first.count {
                    sendQueue.removeFirst()
                    sendOffset = 0
                }
            }
            pendingWriteBytes -= part.count
            unacknowledged += part.count
            peer.enqueue(part, from: host)
        }
        if pendingWriteBytes == 0, !drainWaiters.isEmpty {
            let waiters = drainWaiters
            drainWaiters = []
            for body in waiters where !isClosed { body() }
        }
    }

    /// End of stream after the bytes sent so far.
    private func sendFin() {
        peer?.enqueue(nil, from: host)
    }

    /// A segment (or end of stream) leaves `from` toward this end.
    private func enqueue(_ bytes: [UInt8]?, from: Int) {
        guard !isClosed else { return }  // the kernel drops it (and would answer with a reset)
        let size = bytes?.count ?? 40
        let rate = min(fabric.bandwidth[from], fabric.bandwidth[host])
        linkFreeAt = max(linkFreeAt, fabric.loop.now) + UInt64(Double(size) / rate * 1e9)
        let due = max(linkFreeAt + fabric.latency, transit.last?.due ?? 0)
        transit.append((due, bytes))
        fabric.loop.at(due, host: host, epoch: epoch, "tcp c\(id) \(bytes.map { "\($0.count) B" } ?? "fin") from n\(from)", on: queue) { [self] in
            deliverDue(from: from)
        }
    }

    /// Moves the segments that are due into the inbox, in order, unless a partition holds them.
    private func deliverDue(from: Int) {
        guard !transit.isEmpty else { return }
        guard fabric.side[from] == fabric.side[host] else {
            // Retransmitted until the partition heals.
            guard !retryScheduled else { return }
            retryScheduled = true
            fabric.loop.at(fabric.loop.now + 1_000_000_000, host: host, epoch: epoch, "tcp c\(id) retransmit", on: queue) { [self] in
                retryScheduled = false
                deliverDue(from: from)
            }
            return
        }
        while let first = transit.first, first.due <= fabric.loop.now {
            transit.removeFirst()
            if let bytes = first.bytes { inbox.append(bytes) } else { inboxEnded = true }
        }
        scheduleRead()
    }

    // MARK: Receiving

    private func scheduleRead() {
        guard started, !isClosed, !paused, !readScheduled, !inbox.isEmpty || inboxEnded else { return }
        readScheduled = true
        fabric.loop.at(fabric.loop.now + HostScheduler.hopNanos, host: host, epoch: epoch, "read c\(id)", on: queue) { [self] in
            readScheduled = false
            readAvailable()
        }
    }

    private func readAvailable() {
        var read = 0
        for _ in 0..<Self.readsPerTurn {
            guard !isClosed, !paused, let onRead else { break }
            if inbox.isEmpty {
                if inboxEnded { finish(nil) }
                break
            }
            var bytes = inbox.removeFirst()
            if bytes.count > Self.segment {
                inbox.insert(Array(bytes[Self.segment...]), at: 0)
                bytes = Array(bytes[..<Self.segment])
            }
            read += bytes.count
            bytes.withUnsafeBytes { onRead($0) }
        }
        if read > 0 { acknowledge(read) }
        scheduleRead()
    }

    /// Tells the sender that `count` bytes were read, freeing its window.
    private func acknowledge(_ count: Int) {
        guard let peer else { return }
        let there = peer.host
        fabric.loop.at(fabric.loop.now + fabric.latency, host: there, epoch: peer.epoch, "ack c\(id) \(count) B", on: peer.queue) {
            peer.acknowledged(count)
        }
    }

    private func acknowledged(_ count: Int) {
        unacknowledged -= count
        pump()
    }

    // MARK: Ending

    private func finish(_ reason: SocketError?) {
        guard !isClosed else { return }
        isClosed = true
        sendQueue = []
        pendingWriteBytes = 0
        inbox = []
        transit = []
        drainWaiters = []
        onRead = nil
        let callback = onClose
        onClose = nil
        fabric.hosts[host].connections.removeAll { $0 === self }
        callback?(reason)
    }

    /// This end's process died: no callback runs any more, and the far end reads end of stream.
    func abandon() {
        guard !isClosed else { return }
        sendFin()
        isClosed = true
        (sendQueue, inbox, transit) = ([], [], [])
        pendingWriteBytes = 0
        onRead = nil
        onClose = nil
        drainWaiters = []
        peer = nil
    }
}
