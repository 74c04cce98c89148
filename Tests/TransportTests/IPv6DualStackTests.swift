import TestSupport
import Dispatch
import Glibc
import Testing
import Transport

/// IPv6 next to IPv4 on one port: `[::]` with IPV6_V6ONLY, as a node listens when told
/// `0.0.0.0`, and IPv6 multicast by interface index. Everything stays on loopback; a machine
/// without IPv6 on `lo` skips (see `environmentLimit`) rather than fails.
@Suite(.timeLimit(.minutes(1))) struct IPv6DualStackTests {
    /// `[::]:0`, or nil (after `environmentLimit`) where the kernel has no IPv6.
    static func ipv6Wildcard() -> SocketAddress? {
        let any = try! SocketAddress(host: "::", port: 0)
        let queue = DispatchQueue(label: "ipv6-probe")
        do {
            let probe = try UDPSocket(bind: try SocketAddress(host: "::1", port: 0), queue: queue)
            queue.sync { probe.close() }
            return any
        } catch {
            environmentLimit("IPv6 unavailable on loopback: \(error)")
            return nil
        }
    }

    /// Without V6ONLY a socket on `[::]` (Linux's dual-stack default) would also hold the IPv4
    /// port, and binding `0.0.0.0` at the same port would fail with EADDRINUSE.
    @Test func v6OnlyLeavesTheIPv4PortFree() throws {
        guard let any = Self.ipv6Wildcard() else { return }
        let queue = DispatchQueue(label: "v6only-bind")
        let udp6 = try UDPSocket(bind: any, queue: queue, reuseAddress: false, v6Only: true)
        let udp4 = try UDPSocket(bind: try SocketAddress(host: "0.0.0.0", port: udp6.localAddress.port),
                                 queue: queue, reuseAddress: false)
        #expect(udp4.localAddress.port == udp6.localAddress.port)
        #expect(udp6.localAddress.family == .ipv6 && udp6.localAddress.isUnspecified)

        let tcp6 = try TCPListener(bind: any, queue: queue, v6Only: true)
        let tcp4 = try TCPListener(bind: try SocketAddress(host: "0.0.0.0", port: tcp6.localAddress.port), queue: queue)
        #expect(tcp4.localAddress.port == tcp6.localAddress.port)
        queue.sync {
            udp6.close(); udp4.close()
            tcp6.close(); tcp4.close()
        }
    }

    @Test func v6OnlySocketsCarryIPv6Loopback() async throws {
        guard let any = Self.ipv6Wildcard() else { return }
        let queue = DispatchQueue(label: "v6only-loopback")
        let receiver = try UDPSocket(bind: any, queue: queue, v6Only: true)
        let sender = try UDPSocket(bind: try SocketAddress(host: "::1", port: 0), queue: queue)
        let target = try SocketAddress(host: "::1", port: receiver.localAddress.port)
        let datagrams = Events<([UInt8], String)>()
        try onQueue(queue) {
            receiver.start { bytes, from in datagrams.send((bytes, from.description)) }
            try sender.send([6], to: target)
        }
        let got = await datagrams.next()
        #expect(got?.0 == [6])
        #expect(got?.1 == "[::1]:\(sender.localAddress.port)")

        let listener = try TCPListener(bind: any, queue: queue, v6Only: true)
        let accepted = Events<String>()
        onQueue(queue) { listener.start { connection in accepted.send(connection.remoteAddress.host); connection.close() } }
        let result = await withCheckedContinuation { continuation in
            TCPConnection.connect(to: target.withPort(listener.localAddress.port), queue: queue, timeout: .seconds(5)) {
                continuation.resume(returning: $0)
            }
        }
        #expect(await accepted.next() == "::1")
        onQueue(queue) {
            if case .success(let connection) = result { connection.close() } else { Issue.record("connect: \(result)") }
            listener.close()
            receiver.close()
            sender.close()
        }
    }

    @Test func ipv6MulticastErrorsAreTyped() throws {
        guard let any = Self.ipv6Wildcard() else { return }
        let queue = DispatchQueue(label: "v6-multicast-errors")
        let socket = try UDPSocket(bind: any, queue: queue, v6Only: true)
        let lo = if_nametoindex("lo")
        try onQueue(queue) {
            #expect(throws: SocketError.invalidAddress("::1 is not a multicast group")) {
                try socket.joinMulticast(group: try SocketAddress(host: "::1", port: 0), interfaceIndex: lo)
            }
            #expect(throws: SocketError.unsupported(
                "IPv4 multicast group 239.255.77.1 by interface index (IPv4 takes an interface address)")) {
                try socket.joinMulticast(group: try SocketAddress(host: "239.255.77.1", port: 0), interfaceIndex: lo)
            }
            // The IPv4 form refuses an IPv6 interface address rather than misreading it.
            #expect(throws: SocketError.unsupported(
                "IPv6 multicast interface by address (IPv6 multicast takes an interface index)")) {
                try socket.setMulticastInterface(try SocketAddress(host: "fe80::1%1", port: 0))
            }
            let group = try SocketAddress(host: "ff02::7777", port: 0)
            #expect(throws: SocketError.system(call: "setsockopt(IPV6_JOIN_GROUP)", errno: ENODEV)) {
                try socket.joinMulticast(group: group, interfaceIndex: 0x7FFF_FFF0)
            }
            try socket.joinMulticast(group: group, interfaceIndex: lo)
            try socket.setMulticastInterface(index: lo)
            try socket.leaveMulticast(group: group, interfaceIndex: lo)
            socket.close()
            #expect(throws: SocketError.closed) { try socket.setMulticastInterface(index: lo) }
        }
    }
}
