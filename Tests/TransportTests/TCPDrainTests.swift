import Dispatch
import Testing
import Transport

/// `whenDrained`: a writer that makes its output a part at a time is told when the kernel has
/// taken everything written so far.
@Suite(.timeLimit(.minutes(1))) struct TCPDrainTests {
    @Test func runsAtOnceWhenNothingIsPending() async throws {
        let queue = DispatchQueue(label: "drain-idle")
        let pair = try await TCPCloseTests.makePair(queue: queue)
        onQueue(queue) {
            let calls = Counter()
            pair.server.whenDrained { calls.value += 1 }
            #expect(calls.value == 1)
            pair.client.close()
            pair.server.close()
            pair.listener.close()
        }
    }

    @Test func runsOnceAfterTheReaderTookEverything() async throws {
        let queue = DispatchQueue(label: "drain-slow-reader")
        let pair = try await TCPCloseTests.makePair(queue: queue, startClient: false)
        let total = 32 << 20  // more than the kernel buffers of both ends hold
        let read = Counter(), calls = Counter()
        let drained = Events<Int>()
        onQueue(queue) {
            pair.server.write([UInt8](repeating: 5, count: total))
            #expect(pair.server.pendingWriteBytes > 0)
            pair.server.whenDrained {
                calls.value += 1
                #expect(pair.server.pendingWriteBytes == 0)
                drained.send(read.value)
            }
            #expect(calls.value == 0)
            // Only now does the other end read.
            pair.client.start(onRead: { read.value += $0.count }, onClose: { _ in })
        }
        let readWhenDrained = await drained.next()
        #expect(readWhenDrained.map { $0 > 0 } == true)
        onQueue(queue) {
            #expect(calls.value == 1)
            // Closed: a later wait is dropped, never run.
            pair.server.close()
            pair.server.whenDrained { calls.value += 1 }
            #expect(calls.value == 1)
            pair.client.close()
            pair.listener.close()
        }
    }
}
