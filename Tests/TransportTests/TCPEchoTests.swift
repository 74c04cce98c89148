import Dispatch
import Testing
import Transport

@Suite(.timeLimit(.minutes(2))) struct TCPEchoTests {
    enum ClientEvent: Sendable {
        case connected(TCPConnection)
        case failed(SocketError)
        case read([UInt8])
        case closed(SocketError?)
    }

    /// Connects to `address` on `queue` and reports progress as events.
    static func connectAndRead(to address: SocketAddress, queue: DispatchQueue, events: Events<ClientEvent>) {
        TCPConnection.connect(to: address, queue: queue, timeout: .seconds(10)) { result in
            switch result {
            case .success(let connection):
                connection.start(onRead: { events.send(.read($0)) }, onClose: { events.send(.closed($0)) })
                events.send(.connected(connection))
            case .failure(let error):
                events.send(.failed(error))
            }
        }
    }

    @Test func echoesTenMebibytes() async throws {
        // One queue for both ends: while the client's `write` runs, the server
        // cannot drain the socket, so the kernel must refuse part of the
        // 10 MiB and the rest has to go through the write source.
        let serverQueue = DispatchQueue(label: "echo")
        let clientQueue = serverQueue
        let listener = try TCPListener(bind: loopback(), queue: serverQueue)
        #expect(listener.localAddress.port != 0)
        onQueue(serverQueue) {
            listener.start { connection in
                connection.start(onRead: { connection.write($0) }, onClose: { _ in })
            }
        }

        let events = Events<ClientEvent>()
        Self.connectAndRead(to: listener.localAddress, queue: clientQueue, events: events)
        guard case .connected(let client) = await events.next() else {
            Issue.record("connect failed")
            return
        }
        #expect(client.remoteAddress == listener.localAddress)

        // A pattern that catches reordered, dropped or duplicated chunks.
        let size = 10 * 1024 * 1024
        let payload = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 16) }
        let pendingRightAfterWrite = onQueue(clientQueue) { () -> Int in
            client.write(payload)
            return client.pendingWriteBytes
        }
        #expect(pendingRightAfterWrite > 0)

        var received: [UInt8] = []
        received.reserveCapacity(size)
        while received.count < size, let event = await events.next() {
            switch event {
            case .read(let chunk):
                #expect(chunk.count <= TCPConnection.readChunkSize)
                received += chunk
            default:
                Issue.record("unexpected \(event)")
                return
            }
        }
        #expect(received.count == size)
        #expect(received == payload)
        onQueue(clientQueue) {
            #expect(client.pendingWriteBytes == 0)
            client.close()
        }
        #expect(await closedEvent(events) == .some(nil))
        onQueue(serverQueue) { listener.close() }
    }

    @Test func manySmallWritesArriveInOrder() async throws {
        let serverQueue = DispatchQueue(label: "small-server")
        let clientQueue = DispatchQueue(label: "small-client")
        let listener = try TCPListener(bind: loopback(), queue: serverQueue)
        let serverEvents = Events<ClientEvent>()
        onQueue(serverQueue) {
            listener.start { connection in
                connection.start(onRead: { serverEvents.send(.read($0)) }, onClose: { serverEvents.send(.closed($0)) })
            }
        }
        let events = Events<ClientEvent>()
        Self.connectAndRead(to: listener.localAddress, queue: clientQueue, events: events)
        guard case .connected(let client) = await events.next() else {
            Issue.record("connect failed")
            return
        }
        var expected: [UInt8] = []
        onQueue(clientQueue) {
            for index in 0..<20_000 { client.write([UInt8(truncatingIfNeeded: index), 0xAA]) }
            client.shutdownAfterWrites()
            client.write([0xFF])  // ignored after shutdownAfterWrites
        }
        for index in 0..<20_000 { expected += [UInt8(truncatingIfNeeded: index), 0xAA] }
        var received: [UInt8] = []
        loop: while let event = await serverEvents.next() {
            switch event {
            case .read(let chunk): received += chunk
            case .closed(let reason):
                #expect(reason == nil)
                break loop
            default: break
            }
        }
        #expect(received == expected)
        // The server closed on end of stream; the client sees that too.
        #expect(await closedEvent(events) == .some(nil))
        onQueue(serverQueue) { listener.close() }
    }
}

/// Skips read events until the close event and returns its reason.
func closedEvent(_ events: Events<TCPEchoTests.ClientEvent>) async -> SocketError?? {
    while let event = await events.next() {
        if case .closed(let reason) = event { return .some(reason) }
    }
    return nil
}
