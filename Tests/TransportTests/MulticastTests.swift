import TestSupport
import Dispatch
import Testing
import Transport

/// Several nodes on one host share the discovery port with SO_REUSEPORT and
/// must all hear one multicast datagram. Everything stays on loopback: the
/// receivers join on 127.0.0.1 and the sender sends out of 127.0.0.1.
@Suite(.timeLimit(.minutes(1))) struct MulticastTests {
    enum Event: Sendable, Equatable {
        case received(String, [UInt8])
        case gaveUp
    }

    /// How long to wait for the datagram before deciding that this machine
    /// does not loop multicast back on `lo`. A deadline on a probe, not a
    /// sleep used for ordering.
    static let probeDeadline: DispatchTimeInterval = .seconds(3)

    @Test func reusePortSocketsBothReceiveAMulticastDatagram() async throws {
        let queue = DispatchQueue(label: "multicast")
        let group = try SocketAddress(host: "239.255.77.1", port: 0)
        let interface = loopback()
        let payload: [UInt8] = Array("hello group".utf8)

        // Binding to the group address (not the wildcard) keeps other traffic
        // to this port out; the second socket shares the first one's port.
        let first = try UDPSocket(bind: group, queue: queue, reusePort: true)
        let port = first.localAddress.port
        let second = try UDPSocket(bind: group.withPort(port), queue: queue, reusePort: true)
        let sender = try UDPSocket(bind: interface, queue: queue)
        #expect(second.localAddress == first.localAddress)

        let events = Events<Event>()
        var setupError: SocketError?
        do {
            try onQueue(queue) {
                first.start { bytes, _ in events.send(.received("first", bytes)) }
                second.start { bytes, _ in events.send(.received("second", bytes)) }
                try first.joinMulticast(group: group, interfaceAddress: interface)
                try second.joinMulticast(group: group, interfaceAddress: interface)
                try sender.setMulticastInterface(interface)
                try sender.send(payload, to: group.withPort(port))
            }
        } catch let error as SocketError {
            setupError = error
        }
        let deadline = schedule(after: Self.probeDeadline, on: queue) { events.send(.gaveUp) }

        var receivers: Set<String> = []
        if setupError == nil {
            while receivers.count < 2, let event = await events.next() {
                guard case .received(let name, let bytes) = event else { break }
                #expect(bytes == payload)
                receivers.insert(name)
            }
        }
        deadline.cancel()
        onQueue(queue) {
            first.close()
            second.close()
            sender.close()
        }

        if let setupError {
            environmentLimit("multicast on the loopback interface is not permitted here: \(setupError)")
        } else if receivers.isEmpty {
            environmentLimit("multicast is not looped back on lo here (no datagram within \(Self.probeDeadline))")
        } else {
            #expect(receivers == ["first", "second"])
        }
    }
}
