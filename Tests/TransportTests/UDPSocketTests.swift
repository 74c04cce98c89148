import TestSupport
import Dispatch
import Glibc
import Testing
import Transport

@Suite(.timeLimit(.minutes(1))) struct UDPSocketTests {
    struct Datagram: Sendable, Equatable {
        var receiver: String
        var bytes: [UInt8]
        var sender: SocketAddress
    }

    @Test func twoSocketsExchangeDatagrams() async throws {
        let queue = DispatchQueue(label: "udp-exchange")
        let a = try UDPSocket(bind: loopback(), queue: queue)
        let b = try UDPSocket(bind: loopback(), queue: queue)
        #expect(a.localAddress.port != 0)
        let events = Events<Datagram>()
        try onQueue(queue) {
            a.start { events.send(Datagram(receiver: "a", bytes: $0, sender: $1)) }
            b.start { events.send(Datagram(receiver: "b", bytes: $0, sender: $1)) }
            try a.send([1, 2, 3], to: b.localAddress)
        }
        #expect(await events.next() == Datagram(receiver: "b", bytes: [1, 2, 3], sender: a.localAddress))

        try onQueue(queue) { try b.send(Array(repeating: 7, count: 60_000), to: a.localAddress) }
        #expect(await events.next() == Datagram(receiver: "a", bytes: Array(repeating: 7, count: 60_000), sender: b.localAddress))

        onQueue(queue) {
            a.close()
            b.close()
        }
    }

    @Test func worksOverIPv6Loopback() async throws {
        let queue = DispatchQueue(label: "udp-v6")
        let local = try SocketAddress(host: "::1", port: 0)
        let a: UDPSocket
        let b: UDPSocket
        do {
            a = try UDPSocket(bind: local, queue: queue)
            b = try UDPSocket(bind: local, queue: queue)
        } catch {
            // Some containers have no IPv6 loopback; that is not our bug.
            environmentLimit("IPv6 loopback unavailable: \(error)")
            return
        }
        let events = Events<Datagram>()
        try onQueue(queue) {
            b.start { events.send(Datagram(receiver: "b", bytes: $0, sender: $1)) }
            try a.send([9], to: b.localAddress)
        }
        let got = await events.next()
        #expect(got?.bytes == [9])
        #expect(got?.sender.description == "[::1]:\(a.localAddress.port)")
        onQueue(queue) {
            a.close()
            b.close()
        }
    }

    @Test func sendingToAClosedPortDoesNotCrash() async throws {
        let queue = DispatchQueue(label: "udp-closed-port")
        let closedPort: UInt16 = try {
            let probe = try UDPSocket(bind: loopback(), queue: queue)
            queue.sync { probe.close() }
            return probe.localAddress.port
        }()
        let sender = try UDPSocket(bind: loopback(), queue: queue)
        let echo = try UDPSocket(bind: loopback(), queue: queue)
        let events = Events<[UInt8]>()
        try onQueue(queue) {
            sender.start { bytes, _ in events.send(bytes) }
            echo.start { bytes, from in try? echo.send(bytes, to: from) }
            // Each of these draws an ICMP port-unreachable on loopback.
            for _ in 0..<5 { try sender.send([0], to: loopback(closedPort)) }
            // The socket must still work afterwards.
            try sender.send([42], to: echo.localAddress)
        }
        #expect(await events.next() == [42])
        onQueue(queue) {
            sender.close()
            echo.close()
        }
    }

    @Test func closeIsIdempotentAndSilencesCallbacks() async throws {
        let queue = DispatchQueue(label: "udp-close")
        let receiver = try UDPSocket(bind: loopback(), queue: queue)
        let witness = try UDPSocket(bind: loopback(), queue: queue)
        let sender = try UDPSocket(bind: loopback(), queue: queue)
        let afterClose = Counter()
        let events = Events<[UInt8]>()
        try onQueue(queue) {
            receiver.start { _, _ in afterClose.value += 1 }
            witness.start { bytes, _ in events.send(bytes) }
            receiver.close()
            receiver.close()
            #expect(receiver.isClosed)
            #expect(throws: SocketError.closed) { try receiver.send([1], to: witness.localAddress) }
            #expect(throws: SocketError.closed) { try receiver.joinMulticast(group: SocketAddress.parse("239.1.1.1:1")) }
            // Sent before the witness datagram; if the receiver were still
            // listening it would have run its callback by the time the
            // witness's runs on the same queue.
            try sender.send([1], to: receiver.localAddress)
            try sender.send([2], to: witness.localAddress)
        }
        #expect(await events.next() == [2])
        onQueue(queue) {
            #expect(afterClose.value == 0)
            sender.close()
            witness.close()
            sender.close()
        }
    }

    @Test func closeInsideCallbackStopsDelivery() async throws {
        let queue = DispatchQueue(label: "udp-close-in-callback")
        let receiver = try UDPSocket(bind: loopback(), queue: queue)
        let sender = try UDPSocket(bind: loopback(), queue: queue)
        let calls = Counter()
        let events = Events<Int>()
        try onQueue(queue) {
            receiver.start { _, _ in
                calls.value += 1
                receiver.close()
                events.send(calls.value)
            }
            // Queue several datagrams before the read source gets to run.
            for index in 0..<10 { try sender.send([UInt8(index)], to: receiver.localAddress) }
        }
        #expect(await events.next() == 1)
        // A barrier: anything the closed socket could still deliver would
        // already have been queued ahead of this.
        onQueue(queue) {
            #expect(calls.value == 1)
            sender.close()
        }
    }

    @Test func portInUseWithoutReusePortFails() throws {
        let queue = DispatchQueue(label: "udp-in-use")
        let first = try UDPSocket(bind: loopback(), queue: queue, reuseAddress: false)
        #expect(throws: SocketError.system(call: "bind", errno: EADDRINUSE)) {
            _ = try UDPSocket(bind: first.localAddress, queue: queue, reuseAddress: false)
        }
        queue.sync { first.close() }
    }
}
