import Foundation
import Node
import Store
import Transport
import Tree

/// `lanchat doctor`: what stops this node from finding and syncing with the others, and what to
/// do about it. Each check prints `ok`, `skipped` or `PROBLEM` with a line on what to do; the
/// exit status is 0 only when no check found a problem.
enum DoctorCommand {
    static let doctor = Command(spec: CommandSpec(
        name: "doctor",
        abstract: "Check what could stop this node from finding its peers, and say what to do.",
        discussion: """
            Checks the data directory (owner, permissions) and its store (as `lanchat check`), the settings \
            (as `lanchat config`), the interfaces beacons use, whether another program holds the discovery, \
            session or API port, whether multicast and broadcast beacons come back through each interface \
            (a datagram sent to itself, compared with one on a free port, so a firewall dropping the \
            discovery port shows; and likewise over IPv6 link-local multicast), whether the session port is \
            reachable, and, when a node runs on the data \
            directory, how far ahead of this machine's clock its peers' clocks run, against the drift bound \
            beyond which their records are refused. Takes the same options as `lanchat run`. Exits 1 when a \
            check finds a problem.
            """,
        options: RunOptions.specs + [RunOptions.configOption]
    )) { context in
        var report = DoctorReport(console: context.console)
        let settings = try ConfigFile.resolve(context.arguments, options: RunOptions.specs,
                                              directory: context.dataDirectory, environment: context.console.environment)
        report.ok("settings: \(settings.files.filter(\.exists).map(\.path).joined(separator: ", ").nonEmpty ?? "no configuration file") (see `lanchat config`)")
        checkDataDirectory(context.dataDirectory, &report)
        let status = runningNode(context.dataDirectory, &report)
        let discovery = status == nil ? settings.arguments : runningDiscovery(context.dataDirectory, settings.arguments)
        checkDiscovery(discovery, &report)
        checkDiscoveryIPv6(discovery, &report)
        checkSessionPort(settings.arguments, status: status, &report)
        checkAPIPort(settings.arguments, running: status != nil, &report)
        checkClocks(status, &report)
        if report.problems > 0 {
            throw CommandFailure("\(report.problems) problem(s) found")
        }
        context.console.print("all is well")
    }

    // MARK: Data directory and store

    static func checkDataDirectory(_ directory: DataDirectory, _ report: inout DoctorReport) {
        var info = stat()
        guard stat(directory.path, &info) == 0 else {
            report.problem("data directory \(directory.path) does not exist", fix: "create an identity: lanchat init --data \(directory.path) --name 'Your Name'")
            return
        }
        guard info.st_mode & S_IFMT == S_IFDIR else {
            report.problem("\(directory.path) is not a directory", fix: "point --data (or $LANCHAT_DATA) at a directory")
            return
        }
        var fine = true
        if info.st_uid != getuid() {
            fine = false
            report.problem("data directory \(directory.path) belongs to uid \(info.st_uid), not to this user (uid \(getuid()))",
                           fix: "run lanchat as its owner, or: chown -R \(getuid()) \(directory.path)")
        }
        if access(directory.path, R_OK | W_OK | X_OK) != 0 {
            fine = false
            report.problem("data directory \(directory.path) is not readable and writable by this user", fix: "chmod 700 \(directory.path)")
        }
        if info.st_mode & 0o077 != 0 {
            fine = false
            report.problem("data directory \(directory.path) has mode \(String(info.st_mode & 0o777, radix: 8)): other users can reach the identity and the store",
                           fix: "chmod 700 \(directory.path)")
        }
        var key = stat()
        if stat(directory.keyPath, &key) == 0, key.st_mode & 0o077 != 0 {
            fine = false
            report.problem("\(directory.keyPath) has mode \(String(key.st_mode & 0o777, radix: 8)): the identity's secret key is readable by others",
                           fix: "chmod 600 \(directory.keyPath)")
        }
        guard directory.isInitialized else {
            report.problem("no identity in \(directory.path)", fix: "lanchat init --data \(directory.path) --name 'Your Name'")
            return
        }
        if fine { report.ok("data directory \(directory.path): owned by this user, mode 700") }
        do {
            // The store alone, not the identity: a key with wrong permissions is reported above.
            let problems = try Store(path: directory.databasePath).integrityCheck()
            if problems == ["ok"] {
                report.ok("store: passes its integrity check")
            } else {
                report.problem("store: \(problems.count) problem(s), first: \(problems[0])", fix: "see `lanchat check`; restore from a backup or let peers refill a fresh data directory")
            }
        } catch {
            report.problem("store cannot be opened: \(error)", fix: "see `lanchat check`")
        }
    }

    /// The node running on the directory, if any, as its status.
    static func runningNode(_ directory: DataDirectory, _ report: inout DoctorReport) -> NodeStatus? {
        guard directory.isInitialized, let reply = ControlClient.ask(directory, "status"),
              let status = try? JSONDecoder().decode(NodeStatus.self, from: Data(reply.utf8)) else {
            report.skipped("no node runs on this data directory: its live checks (session port in use, clocks of peers) are skipped")
            return nil
        }
        report.ok("a node runs on this data directory (pid \(status.pid), sessions on \(status.listen), \(status.peers.filter(\.connected).count) peer(s) connected)")
        return status
    }

    /// `settings` with the discovery options of the node running on `directory`, from its
    /// `node.json` (its command line may differ from the configuration files).
    static func runningDiscovery(_ directory: DataDirectory, _ settings: ParsedArguments) -> ParsedArguments {
        guard let info = ControlClient.info(directory), let port = info["discoveryPort"] as? String else { return settings }
        var arguments = settings
        arguments.options["discovery-port"] = [port]
        let interfaces = (info["discoveryInterfaces"] as? String ?? "").split(separator: ",").map(String.init)
        arguments.options["discovery-interface"] = interfaces.isEmpty ? nil : interfaces
        if info["discovery"] as? String == "off" { arguments.flags.insert("no-discovery") } else { arguments.flags.remove("no-discovery") }
        return arguments
    }

    // MARK: Discovery

    static func checkDiscovery(_ args: ParsedArguments, _ report: inout DoctorReport) {
        if args.flag("no-discovery") {
            let peers = args.values("peer")
            if peers.isEmpty {
                report.problem("discovery is off and no --peer is given: this node will find no one", fix: "remove no-discovery, or add peer = HOST:PORT lines")
            } else {
                report.skipped("discovery is off: only the manual peers \(peers.joined(separator: ", ")) are reached")
            }
            return
        }
        let port = args.value("discovery-port").flatMap(UInt16.init) ?? 47777
        let named = args.values("discovery-interface")
        let all = ReachProbe.interfaces()
        var chosen = all
        if !named.isEmpty {
            let missing = named.filter { name in !all.contains { $0.name == name } }
            if !missing.isEmpty {
                let up = all.map(\.name).joined(separator: ", ")
                report.problem("discovery interface(s) \(missing.joined(separator: ", ")) not up with an IPv4 address (up: \(up.isEmpty ? "none" : up))",
                               fix: "name an interface that is up in discovery-interface, or leave it unset for all")
            }
            chosen = all.filter { named.contains($0.name) }
        }
        let lan = chosen.filter { !$0.isLoopback }
        let list = chosen.map { "\($0.name) \($0.address)" }.joined(separator: ", ")
        if chosen.isEmpty {
            report.problem("no interface for beacons", fix: "bring a network interface up, or fix discovery-interface")
            return
        } else if lan.isEmpty && named.isEmpty {
            report.problem("only loopback is up (\(list)): nodes on other machines cannot hear this one", fix: "connect this machine to the LAN")
        } else if lan.isEmpty {
            report.ok("beacons on \(list) only (this machine's nodes only, as discovery-interface says)")
        } else {
            report.ok("beacons on \(list)")
        }

        let results: [ReachProbe.Result]
        do {
            results = try ReachProbe.run(port: port, interfaces: chosen)
        } catch {
            let owners = PortOwners.find(port: port, udp: true).map(\.description).joined(separator: ", ")
            report.problem("UDP port \(port) cannot be shared (\(error)): another program holds it\(owners.isEmpty ? "" : ": \(owners)")",
                           fix: "stop that program, or pick another port for every node: discovery-port = PORT")
            return
        }
        let holders = PortOwners.find(port: port, udp: true).filter { $0.pid != getpid() }
        if holders.isEmpty {
            report.ok("UDP port \(port) is free for beacons")
        } else {
            report.ok("UDP port \(port) is shared with \(holders.map(\.description).joined(separator: ", "))")
        }
        let rules = FirewallRules.dropping(port: port, proto: "udp")
        for result in results {
            let name = "\(result.interface.name) (\(result.interface.address))"
            let ways = [result.multicast ? "multicast" : nil, result.broadcast ? "broadcast" : nil].compactMap { $0 }
            if result.discoveryHeard {
                report.ok("beacons through \(name) come back by \(ways.joined(separator: " and ")) on UDP port \(port)")
            } else if result.controlHeard {
                let evidence = rules.isEmpty ? "" : "; the firewall has: \(rules.joined(separator: " | "))"
                report.problem("a firewall drops the discovery port: datagrams through \(name) come back on a free UDP port but not on port \(port)\(evidence)",
                               fix: "allow UDP port \(port) in, e.g. nft insert rule inet filter input udp dport \(port) accept (or ufw allow \(port)/udp)")
            } else {
                report.problem("neither multicast nor broadcast comes back through \(name), on any port",
                               fix: "the interface may not carry multicast, or a firewall drops all of it: allow UDP port \(port) and multicast to 239.255.77.77 in, or add peers by address with peer = HOST:PORT")
            }
        }
    }

    /// IPv6 link-local beacons, which nodes listening on a wildcard address also send. A
    /// firewall dropping them is a problem (a LAN carrying IPv6 alone is then silent); IPv6
    /// multicast not coming back at all is only noted, since IPv4 carries discovery where it
    /// works.
    static func checkDiscoveryIPv6(_ args: ParsedArguments, _ report: inout DoctorReport) {
        guard !args.flag("no-discovery") else { return }
        let port = args.value("discovery-port").flatMap(UInt16.init) ?? 47777
        let named = args.values("discovery-interface")
        let interfaces = ReachProbe.interfacesIPv6().filter { named.isEmpty || named.contains($0.name) }
        guard !interfaces.isEmpty else { return }
        guard let results = ReachProbe.runIPv6(port: port, interfaces: interfaces) else {
            report.skipped("IPv6 beacons: no IPv6 socket on UDP port \(port) here")
            return
        }
        for result in results {
            if result.heard {
                report.ok("IPv6 beacons through \(result.interface.name) come back by link-local multicast on UDP port \(port)")
            } else if result.controlHeard {
                report.problem("a firewall drops the discovery port over IPv6: link-local multicast through \(result.interface.name) comes back on a free UDP port but not on port \(port)",
                               fix: "allow UDP port \(port) in over IPv6 too, e.g. nft insert rule inet filter input udp dport \(port) accept")
            } else {
                report.skipped("IPv6 beacons do not come back through \(result.interface.name) (IPv4 carries discovery where it works)")
            }
        }
    }

    // MARK: Ports

    static func checkSessionPort(_ args: ParsedArguments, status: NodeStatus?, _ report: inout DoctorReport) {
        let configured = args.value("listen").flatMap { try? SocketAddress.parse($0) }
        if let status {
            guard let listen = try? SocketAddress.parse(status.listen) else { return }
            checkTCPReach(port: listen.port, listener: nil, &report)
            return
        }
        guard let configured, configured.port != 0 else {
            report.skipped("session port: a free one is picked at each start; behind a firewall, fix it (listen = 0.0.0.0:PORT) and allow TCP and UDP on it")
            return
        }
        let queue = DispatchQueue(label: "lanchat.doctor.tcp")
        do {
            let listener = try TCPListener(bind: configured, queue: queue)
            defer { queue.sync { listener.close() } }
            report.ok("session port \(configured.port) is free")
            checkTCPReach(port: configured.port, listener: listener, &report)
        } catch {
            let owners = PortOwners.find(port: configured.port, udp: false).map(\.description).joined(separator: ", ")
            report.problem("session port \(configured.port) cannot be bound (\(error))\(owners.isEmpty ? "" : ": held by \(owners)")",
                           fix: "stop that program, or set another port: listen = 0.0.0.0:PORT")
        }
    }

    /// Connects to `port` at each LAN address of this host, beside a listener on a free port; a
    /// connection that times out where the free port's succeeds is a firewall dropping the port.
    static func checkTCPReach(port: UInt16, listener: TCPListener?, _ report: inout DoctorReport) {
        let queue = DispatchQueue(label: "lanchat.doctor.tcp-control")
        guard let control = try? TCPListener(bind: SocketAddress(host: "0.0.0.0", port: 0), queue: queue) else { return }
        defer { queue.sync { control.close() } }
        queue.sync { control.start { $0.close() } }
        if let listener { listener.queue.sync { listener.start { $0.close() } } }
        let rules = FirewallRules.dropping(port: port, proto: "tcp")
        var fine = true
        for interface in ReachProbe.interfaces() where !interface.isLoopback {
            guard let target = try? SocketAddress(host: interface.address, port: port),
                  let controlTarget = try? SocketAddress(host: interface.address, port: control.localAddress.port) else { continue }
            let reached = connects(target)
            if !reached && connects(controlTarget) {
                fine = false
                let evidence = rules.isEmpty ? "" : "; the firewall has: \(rules.joined(separator: " | "))"
                report.problem("session port \(port) is not reachable at \(interface.address) (\(interface.name)) while a free port is\(evidence)",
                               fix: "allow TCP and UDP port \(port) in, e.g. nft insert rule inet filter input tcp dport \(port) accept")
            }
        }
        if !rules.isEmpty && fine {
            fine = false
            report.problem("the firewall drops the session port \(port): \(rules.joined(separator: " | "))",
                           fix: "allow TCP and UDP port \(port) in")
        }
        if fine { report.ok("session port \(port) is reachable at this machine's addresses") }
    }

    static func connects(_ address: SocketAddress) -> Bool {
        guard let fd = try? BlockingSocket.connect(to: address, timeoutSeconds: 2) else { return false }
        close(fd)
        return true
    }

    static func checkAPIPort(_ args: ParsedArguments, running: Bool, _ report: inout DoctorReport) {
        guard !running, let api = args.value("api").flatMap({ try? SocketAddress.parse($0) }), api.port != 0 else { return }
        let queue = DispatchQueue(label: "lanchat.doctor.api")
        if let listener = try? TCPListener(bind: api, queue: queue) {
            queue.sync { listener.close() }
            report.ok("API port \(api.port) is free")
        } else {
            let owners = PortOwners.find(port: api.port, udp: false).map(\.description).joined(separator: ", ")
            report.problem("API address \(api) cannot be bound\(owners.isEmpty ? "" : ": held by \(owners)")",
                           fix: "stop that program, or set another port: api = 127.0.0.1:PORT")
        }
    }

    // MARK: Clocks

    static func checkClocks(_ status: NodeStatus?, _ report: inout DoctorReport) {
        guard let status else { return }
        let bound = Int64(HybridLogicalClock().maxDrift)
        let measured = status.peers.filter { $0.clockLeadMillis != nil }
        guard !measured.isEmpty else {
            report.skipped("clocks: no peer has sent records of its own yet, so no clock to compare")
            return
        }
        var fine = true
        for peer in measured {
            let lead = peer.clockLeadMillis!
            if lead > bound / 2 {
                fine = false
                let refused = lead > bound ? "its new records are refused until this clock catches up" : "near the point where its records are refused"
                report.problem("\(peer.name)'s clock runs \(lead / 1000) s ahead of this machine's (drift bound \(bound / 1000) s): \(refused)",
                               fix: "synchronise both clocks (NTP: timedatectl set-ntp true)")
            }
        }
        if fine {
            let worst = measured.map { $0.clockLeadMillis! }.max()!
            report.ok("clocks: \(measured.count) peer(s) within \(max(worst, 0) / 1000) s of this machine (drift bound \(bound / 1000) s)")
        }
    }
}

/// The doctor's findings, printed as they come.
struct DoctorReport {
    let console: Console
    var problems = 0

    mutating func ok(_ text: String) { console.print("ok       \(text)") }
    mutating func skipped(_ text: String) { console.print("skipped  \(text)") }
    mutating func problem(_ text: String, fix: String) {
        problems += 1
        console.print("PROBLEM  \(text)")
        console.print("         what to do: \(fix)")
    }
}

/// The processes with a socket on a local port, from /proc (sockets of other users' processes
/// are found only when running as root).
struct PortOwners: CustomStringConvertible {
    let pid: Int32
    let name: String

    var description: String { "\(name) (pid \(pid))" }

    static func find(port: UInt16, udp: Bool) -> [PortOwners] {
        var inodes = Set<String>()
        for table in udp ? ["/proc/net/udp", "/proc/net/udp6"] : ["/proc/net/tcp", "/proc/net/tcp6"] {
            guard let text = try? String(contentsOfFile: table, encoding: .utf8) else { continue }
            for line in text.split(separator: "\n").dropFirst() {
                let fields = line.split(separator: " ")
                guard fields.count > 9, let colon = fields[1].lastIndex(of: ":"),
                      UInt16(fields[1][fields[1].index(after: colon)...], radix: 16) == port else { continue }
                if !udp && fields[3] != "0A" { continue }  // TCP: listening sockets only
                inodes.insert(String(fields[9]))
            }
        }
        guard !inodes.isEmpty, let pids = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return [] }
        var owners = [PortOwners]()
        for pid in pids.compactMap(Int32.init) {
            guard let fds = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd") else { continue }
            let owns = fds.contains { fd in
                guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\(fd)"),
                      target.hasPrefix("socket:[") else { return false }
                return inodes.contains(String(target.dropFirst(8).dropLast()))
            }
            if owns {
                let name = (try? String(contentsOfFile: "/proc/\(pid)/comm", encoding: .utf8))?
                    .trimmingCharacters(in: .whitespacesAndNewlines) ?? "?"
                owners.append(PortOwners(pid: pid, name: name))
            }
        }
        return owners
    }
}

/// The nftables rules that drop or reject a port, as `nft list ruleset` shows them (readable by
/// root only; empty when nft is missing or says nothing).
enum FirewallRules {
    static func dropping(port: UInt16, proto: String) -> [String] {
        guard let nft = ["/usr/sbin/nft", "/sbin/nft"].first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else { return [] }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: nft)
        process.arguments = ["list", "ruleset"]
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return [] }
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let text = String(decoding: data, as: UTF8.self)
        return text.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.filter { line in
            guard line.contains("drop") || line.contains("reject") else { return false }
            guard line.contains("dport") else { return false }
            let mentionsPort = line.range(of: "dport \(port)")?.isEmpty == false
                || line.range(of: "dport { ")?.isEmpty == false && line.contains("\(port)")
            let protoMatches = line.contains(proto) || line.contains("th dport")
            return mentionsPort && protoMatches
        }
    }
}

extension String {
    var nonEmpty: String? { isEmpty ? nil : self }
}
