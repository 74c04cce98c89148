import Dispatch
import Transport

/// An ordered channel from queue callbacks to an async test.
///
/// Callbacks `send` from the socket queue; the test awaits `next()`. Events
/// keep their order because they are yielded from one serial queue.
/// Tests wait on these events, never on sleeps; each suite's time limit
/// turns a missing event into a failure instead of a hang.
final class Events<Element: Sendable>: Sendable {
    private let stream: AsyncStream<Element>
    private let continuation: AsyncStream<Element>.Continuation

    init() {
        (stream, continuation) = AsyncStream.makeStream(of: Element.self)
    }

    func send(_ element: Element) {
        continuation.yield(element)
    }

    /// The next event; nil only if the stream was finished.
    func next() async -> Element? {
        var iterator = stream.makeAsyncIterator()
        return await iterator.next()
    }
}

/// Runs `body` on `queue` and returns its result, so tests can call the
/// queue-confined socket APIs.
func onQueue<T: Sendable>(_ queue: DispatchQueue, _ body: @Sendable () throws -> T) rethrows -> T {
    try queue.sync(execute: body)
}

/// A loopback IPv4 address with the given port.
func loopback(_ port: UInt16 = 0) -> SocketAddress {
    try! SocketAddress(host: "127.0.0.1", port: port)
}

/// A TCP port on 127.0.0.1 with nothing listening: bound by a listener
/// that is then closed. (Another process could grab it in between; on a
/// test machine that is improbable.)
func unusedLoopbackPort() throws -> UInt16 {
    let queue = DispatchQueue(label: "unused-port")
    let listener = try TCPListener(bind: loopback(), queue: queue)
    let port = listener.localAddress.port
    queue.sync { listener.close() }
    return port
}

/// Counts callback invocations; confined to the socket queue it is used on.
final class Counter: @unchecked Sendable {
    var value = 0
}
