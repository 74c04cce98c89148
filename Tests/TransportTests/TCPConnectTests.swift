import TestSupport
import Dispatch
import Glibc
import Testing
import Transport

@Suite(.timeLimit(.minutes(1))) struct TCPConnectTests {
    @Test func refusedConnectionIsATypedError() async throws {
        let port = try unusedLoopbackPort()
        let queue = DispatchQueue(label: "refused")
        let result = await withCheckedContinuation { continuation in
            TCPConnection.connect(to: loopback(port), queue: queue, timeout: .seconds(5)) {
                continuation.resume(returning: $0)
            }
        }
        switch result {
        case .success(let connection):
            Issue.record("connected to \(connection.remoteAddress) where nothing listens")
            queue.sync { connection.close() }
        case .failure(let error):
            #expect(error == .system(call: "connect", errno: ECONNREFUSED))
        }
    }

    /// Loopback answers every SYN at once, so no address there is
    /// non-routable. A listener whose accept queue is full, though, silently
    /// drops new SYNs on Linux, which leaves a connect hanging: exactly the
    /// timeout case. The listener never accepts; attempts continue until one
    /// times out (the first one or two fill the queue and succeed).
    @Test func connectTimesOutAgainstAFullBacklog() async throws {
        let queue = DispatchQueue(label: "timeout")
        let listener = try TCPListener(bind: loopback(), queue: queue, backlog: 1)
        var established: [TCPConnection] = []
        var sawTimeout = false
        for _ in 0..<8 {
            let result = await withCheckedContinuation { continuation in
                TCPConnection.connect(to: listener.localAddress, queue: queue, timeout: .milliseconds(300)) {
                    continuation.resume(returning: $0)
                }
            }
            switch result {
            case .success(let connection):
                established.append(connection)
            case .failure(let error):
                #expect(error == .timedOut)
                sawTimeout = true
            }
            if sawTimeout { break }
        }
        #expect(sawTimeout)
        #expect(established.count >= 1)
        let connections = established
        onQueue(queue) {
            for connection in connections { connection.close() }
            listener.close()
        }
    }

    @Test func connectsOverIPv6Loopback() async throws {
        let queue = DispatchQueue(label: "v6-connect")
        let listener: TCPListener
        do {
            listener = try TCPListener(bind: SocketAddress(host: "::1", port: 0), queue: queue)
        } catch {
            environmentLimit("IPv6 loopback unavailable: \(error)")
            return
        }
        let accepted = Events<SocketAddress>()
        onQueue(queue) {
            listener.start { connection in
                accepted.send(connection.remoteAddress)
                connection.close()
            }
        }
        let result = await withCheckedContinuation { continuation in
            TCPConnection.connect(to: listener.localAddress, queue: queue, timeout: .seconds(5)) {
                continuation.resume(returning: $0)
            }
        }
        let client = try result.get()
        let remoteOfClientSeenByServer = await accepted.next()
        #expect(remoteOfClientSeenByServer == client.localAddress)
        #expect(client.remoteAddress == listener.localAddress)
        onQueue(queue) {
            client.close()
            listener.close()
        }
    }
}
