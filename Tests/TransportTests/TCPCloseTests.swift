import Dispatch
import Testing
import Transport

@Suite(.timeLimit(.minutes(1))) struct TCPCloseTests {
    /// A listener plus one connected client, both started, with the server
    /// side's connection and events exposed.
    struct Pair {
        let listener: TCPListener
        let server: TCPConnection
        let client: TCPConnection
        let serverEvents: Events<TCPEchoTests.ClientEvent>
        let clientEvents: Events<TCPEchoTests.ClientEvent>
    }

    static func makePair(queue: DispatchQueue, startClient: Bool = true) async throws -> Pair {
        let listener = try TCPListener(bind: loopback(), queue: queue)
        let serverEvents = Events<TCPEchoTests.ClientEvent>()
        onQueue(queue) {
            listener.start { connection in
                connection.start(onRead: { serverEvents.send(.read($0)) }, onClose: { serverEvents.send(.closed($0)) })
                serverEvents.send(.connected(connection))
            }
        }
        let clientEvents = Events<TCPEchoTests.ClientEvent>()
        let result = await withCheckedContinuation { continuation in
            TCPConnection.connect(to: listener.localAddress, queue: queue, timeout: .seconds(5)) {
                continuation.resume(returning: $0)
            }
        }
        let client = try result.get()
        if startClient {
            onQueue(queue) {
                client.start(onRead: { clientEvents.send(.read($0)) }, onClose: { clientEvents.send(.closed($0)) })
            }
        }
        guard case .connected(let server) = await serverEvents.next() else { throw SocketError.closed }
        return Pair(listener: listener, server: server, client: client,
                    serverEvents: serverEvents, clientEvents: clientEvents)
    }

    @Test func peerClosingGivesOnCloseNilExactlyOnce() async throws {
        let queue = DispatchQueue(label: "peer-close")
        let pair = try await Self.makePair(queue: queue, startClient: false)
        let closes = Counter()
        let reasons = Events<SocketError?>()
        let reads = Events<[UInt8]>()
        onQueue(queue) {
            pair.client.start(onRead: { reads.send($0) }, onClose: {
                closes.value += 1
                reasons.send($0)
            })
            pair.server.write(Array("bye".utf8))
            pair.server.close()
        }
        #expect(await reads.next() == Array("bye".utf8))
        #expect(await reasons.next() == .some(nil))
        onQueue(queue) {
            #expect(pair.client.isClosed)
            pair.client.close()  // already closed: must not report again
            pair.client.write([1])  // ignored
            #expect(closes.value == 1)
            pair.listener.close()
        }
    }

    @Test func closeIsIdempotentAndNothingFiresAfterIt() async throws {
        let queue = DispatchQueue(label: "close-idempotent")
        let pair = try await Self.makePair(queue: queue, startClient: false)
        let reads = Counter()
        let closes = Counter()
        let firstRead = Events<Int>()
        onQueue(queue) {
            pair.client.start(
                onRead: { _ in
                    reads.value += 1
                    // Close while more data is certainly pending.
                    pair.client.close()
                    pair.client.close()
                    firstRead.send(reads.value)
                },
                onClose: { _ in closes.value += 1 })
            pair.server.write(Array(repeating: 1, count: 4 * 1024 * 1024))
        }
        #expect(await firstRead.next() == 1)
        // The server notices the client went away (reset or end of stream).
        // By then any late client callback would have had its chance.
        #expect(await closedEvent(pair.serverEvents) != nil)
        onQueue(queue) {
            #expect(reads.value == 1)
            #expect(closes.value == 1)
            pair.client.close()
            pair.client.pauseReading()
            pair.client.resumeReading()
            #expect(closes.value == 1)
            #expect(pair.client.pendingWriteBytes == 0)
            pair.listener.close()
            pair.listener.close()
        }
    }

    @Test func pauseReadingHoldsDataUntilResumed() async throws {
        let queue = DispatchQueue(label: "pause")
        let pair = try await Self.makePair(queue: queue, startClient: false)
        let readsWhilePaused = Counter()
        let clientEvents = Events<TCPEchoTests.ClientEvent>()
        onQueue(queue) {
            pair.client.pauseReading()
            pair.client.pauseReading()  // unbalanced pauses must be harmless
            pair.client.start(
                onRead: { bytes in
                    readsWhilePaused.value += 1
                    clientEvents.send(.read(bytes))
                },
                onClose: { clientEvents.send(.closed($0)) })
            pair.server.write([1, 2, 3])
            // A marker along the other direction. When the server reads it,
            // [1, 2, 3] has long been readable on the client, and its read
            // event (same readiness machinery, same serial queue) would have
            // run already had the pause been ignored.
            pair.client.write([9])
        }
        guard case .read(let marker) = await pair.serverEvents.next() else {
            Issue.record("server saw no marker")
            return
        }
        #expect(marker == [9])
        onQueue(queue) {
            #expect(readsWhilePaused.value == 0)
            pair.server.write([4])
            pair.server.shutdownAfterWrites()
            pair.client.resumeReading()
            pair.client.resumeReading()  // and so must unbalanced resumes
        }
        var received: [UInt8] = []
        loop: while let event = await clientEvents.next() {
            switch event {
            case .read(let bytes): received += bytes
            case .closed(let reason):
                #expect(reason == nil)
                break loop
            default: break
            }
        }
        #expect(received == [1, 2, 3, 4])
        onQueue(queue) {
            pair.server.close()
            pair.listener.close()
        }
    }

    /// Dispatch traps if a suspended source is cancelled and released; both
    /// sources here are suspended (reading paused, write source idle after a
    /// flush) when `close` runs.
    @Test func closingWithSuspendedSourcesIsSafe() async throws {
        let queue = DispatchQueue(label: "close-suspended")
        let pair = try await Self.makePair(queue: queue, startClient: false)
        let reasons = Events<SocketError?>()
        onQueue(queue) {
            pair.client.start(onRead: { _ in }, onClose: { reasons.send($0) })
            pair.client.pauseReading()
            // Large enough to need the write source; the server reads it.
            pair.client.write(Array(repeating: 5, count: 8 * 1024 * 1024))
        }
        var receivedByServer = 0
        while receivedByServer < 8 * 1024 * 1024, let event = await pair.serverEvents.next() {
            if case .read(let bytes) = event { receivedByServer += bytes.count }
        }
        onQueue(queue) {
            #expect(pair.client.pendingWriteBytes == 0)
            pair.client.close()
        }
        #expect(await reasons.next() == .some(nil))
        #expect(await closedEvent(pair.serverEvents) == .some(nil))
        onQueue(queue) { pair.listener.close() }
    }

    @Test func acceptedButUnstartedConnectionCanBeDropped() async throws {
        let queue = DispatchQueue(label: "drop-unstarted")
        let listener = try TCPListener(bind: loopback(), queue: queue)
        let accepted = Events<Bool>()
        onQueue(queue) {
            // Not starting or keeping the connection: deinit closes the fd.
            listener.start { _ in accepted.send(true) }
        }
        let result = await withCheckedContinuation { continuation in
            TCPConnection.connect(to: listener.localAddress, queue: queue, timeout: .seconds(5)) {
                continuation.resume(returning: $0)
            }
        }
        let client = try result.get()
        #expect(await accepted.next() == true)
        let reasons = Events<SocketError?>()
        onQueue(queue) { client.start(onRead: { _ in }, onClose: { reasons.send($0) }) }
        #expect(await reasons.next() == .some(nil))
        onQueue(queue) { listener.close() }
    }
}
