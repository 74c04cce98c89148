import Dispatch
import Transport

/// Sessions and pushed records over IPv6 next to IPv4. A node told to listen on the IPv4
/// wildcard (the default) also listens on `[::]` at the same port, IPV6_V6ONLY so the two
/// sockets share the port number without either hearing the other's traffic. Peers found by
/// IPv6 link-local beacons dial that listener; everything else stays as over IPv4.
extension Node {
    /// Opens the `[::]` TCP listener and UDP socket when `config.listen` is `0.0.0.0`. Where
    /// IPv6 is off in the kernel or the port is taken on IPv6, logs one line and carries on
    /// over IPv4 alone.
    func listenOnIPv6Too() {
        dispatchPrecondition(condition: .onQueue(queue))
        guard config.listen.family == .ipv4, config.listen.isUnspecified else { return }
        let port = listenAddress.port
        do {
            let any = try SocketAddress(host: "::", port: port)
            let tcp = try world.network.listen(any, v6Only: true, queue: queue)
            let udp: any DatagramSocket
            do {
                udp = try world.network.bindDatagram(any, v6Only: true, queue: queue)
            } catch {
                tcp.close()
                throw error
            }
            listenerIPv6 = tcp
            sessionSocketIPv6 = udp
            tcp.start { [self] connection in accept(connection) }
            udp.start { [self] bytes, from in receiveDatagram(bytes, from: from) }
        } catch {
            log("sessions over IPv4 only: cannot listen on [::]:\(port) (\(error))", level: .warning)
        }
    }

    /// Whether peers can open sessions to this node over IPv6 on any of its link-local
    /// addresses: only then may it announce itself by IPv6 beacons, whose source address
    /// is where peers dial.
    var acceptsIPv6: Bool {
        listenerIPv6 != nil || (listenAddress.family == .ipv6 && listenAddress.isUnspecified)
    }

    /// The unicast UDP socket that datagrams to `address` leave from: the IPv6 one for an IPv6
    /// peer when there is one, otherwise the socket of the listen address.
    func sessionSocket(for address: SocketAddress) -> (any DatagramSocket)? {
        if address.family == .ipv6, let socket = sessionSocketIPv6 { return socket }
        return sessionSocket
    }
}
