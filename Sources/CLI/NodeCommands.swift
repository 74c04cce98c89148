import Crypto
import Dispatch
import Foundation
import LocalAPI
import Node
import Store
import Sync
import Transport

/// `run`, `peers`, `status` and `network create`: running a node and asking it.
enum NodeCommands {
    static let all = [run, peers, status, network, check]

    static let run = Command(spec: CommandSpec(
        name: "run",
        abstract: "Run a node: discover peers on the LAN and sync with them until interrupted.",
        discussion: """
            Logs one line per event on stderr: `TIME LEVEL message` (levels info, warning, error; no colour \
            unless stderr is a terminal; under systemd, syslog level prefixes instead of times), or one JSON \
            object per line with --log-format json. Stops cleanly on SIGINT or SIGTERM. While it runs, other \
            lanchat commands on the same data directory reach it, so their writes are pushed at once. Every \
            option can also be set in a configuration file (see `lanchat help config`).
            """,
        options: RunOptions.specs + [RunOptions.configOption]
    )) { context in
        // The stop signals are caught before anything slow (opening a large store, binding), so
        // one sent right after start is not lost: it waits for the main queue, which runs once
        // the node is up, and then stops it cleanly.
        let stopping = StopAction()
        signal(SIGINT, SIG_IGN)
        signal(SIGTERM, SIG_IGN)
        var sources = [any DispatchSourceSignal]()
        for number in [SIGINT, SIGTERM] {
            let source = DispatchSource.makeSignalSource(signal: number, queue: .main)
            source.setEventHandler { stopping.run() }
            source.resume()
            sources.append(source)
        }
        let settings = try ConfigFile.resolve(context.arguments, options: RunOptions.specs,
                                              directory: context.dataDirectory, environment: context.console.environment)
        let args = settings.arguments
        let network = try networkKey(args)
        var config = NodeConfig(listen: try address(args.value("listen") ?? "0.0.0.0:0", option: "listen"))
        config.manualPeers = try args.values("peer").map { try address($0, option: "peer") }
        config.discovery = !args.flag("no-discovery")
        config.discoveryInterfaces = args.values("discovery-interface")
        if let port = args.value("discovery-port") {
            guard let p = UInt16(port), p > 0 else { throw UsageError(message: "--discovery-port must be a port number, got '\(port)'") }
            config.discoveryPort = p
        }
        let formatName = args.value("log-format") ?? LogFormat.text.rawValue
        guard let format = LogFormat(rawValue: formatName) else {
            throw UsageError(message: "--log-format must be 'text' or 'json', got '\(formatName)'")
        }
        // `run` is only ever the process's own command line, so it logs to the real stderr.
        let logger = LogWriter.standardError(format: format, environment: context.console.environment)
        config.logEntry = { level, line in logger.log(level, line) }
        let apiAddress = try address(args.value("api") ?? "127.0.0.1:0", option: "api")
        guard args.flag("api-public") || apiAddress.isLoopback else {
            throw UsageError(message: "--api \(apiAddress) is not a loopback address; add --api-public to serve it beyond this machine")
        }
        let runtime = try NodeRuntime(directory: context.dataDirectory, network: network, config: config)
        let token = try args.value("api-token") ?? APIToken.loadOrCreate(context.dataDirectory)
        try runtime.start()
        let api = try APIServer(node: runtime.node, address: apiAddress, token: token)
        runtime.node.queue.sync { api.start() }
        // What `lanchat doctor` checks while the node runs: the discovery it really uses.
        try runtime.publish(extra: ["api": api.address.description, "discovery": config.discovery ? "on" : "off",
                                    "discoveryPort": String(config.discoveryPort),
                                    "discoveryInterfaces": config.discoveryInterfaces.joined(separator: ",")])
        var fields = [("user", runtime.node.userID), ("listen", runtime.node.listenAddress.description), ("network", network.fingerprint)]
        if config.discovery { fields.append(("discovery_port", String(config.discoveryPort))) }
        logger.log(.info, "lanchat node \(runtime.node.userID) listening on \(runtime.node.listenAddress), network \(network.fingerprint)\(config.discovery ? ", discovery on UDP \(config.discoveryPort)" : "")", fields: fields)
        logger.log(.info, "local API on http://\(api.address) (token: lanchat status shows it)", fields: [("api", "http://\(api.address)")])
        stopping.action = {
            logger.log(.info, "stopping")
            runtime.node.queue.sync { api.close() }
            runtime.stop()
        }
        withExtendedLifetime(sources) { dispatchMain() }
    }

    /// What a stop signal does, set once the node runs; used on the main queue only (signal
    /// handlers run there, after start-up has returned to `dispatchMain`).
    final class StopAction: @unchecked Sendable {
        var action: (() -> Void)?

        func run() {
            dispatchPrecondition(condition: .onQueue(.main))
            action?()
            exit(0)
        }
    }

    static func address(_ text: String, option: String) throws -> SocketAddress {
        do { return try SocketAddress.parse(text) } catch {
            throw UsageError(message: "--\(option) needs HOST:PORT with a numeric host, got '\(text)'")
        }
    }

    static func networkKey(_ args: ParsedArguments) throws -> NetworkKey {
        if let file = args.value("network-key-file") {
            guard args.value("network") == nil else { throw UsageError(message: "give --network or --network-key-file, not both") }
            return try NetworkKeyFile.load(file)
        }
        return NetworkKey.named(args.value("network") ?? NetworkKey.defaultName)
    }

    static let peers = Command(spec: CommandSpec(
        name: "peers",
        abstract: "List the peers of the node running on the data directory."
    )) { context in
        let status = try askStatus(context)
        if status.peers.isEmpty { context.console.print("no peers yet") }
        for peer in status.peers {
            let state = peer.connected ? "connected" : "discovered"
            let seen = peer.lastSeenSecondsAgo.map { String(format: ", seen %.0fs ago", $0) } ?? ""
            context.console.print("\(peer.userID)  \(peer.name)  \(peer.address)  \(state)\(seen)")
        }
    }

    static let status = Command(spec: CommandSpec(
        name: "status",
        abstract: "Show the state of the node running on the data directory.",
        options: [OptionSpec(name: "json", valueName: nil, help: "Print the status as JSON.")]
    )) { context in
        let status = try askStatus(context)
        if context.arguments.flag("json") {
            let data = try JSONEncoder().encode(status)
            context.console.print(String(decoding: data, as: UTF8.self))
            return
        }
        context.console.print("user:     \(status.userID) (\(status.name))")
        context.console.print("listen:   \(status.listen)")
        if let api = apiAddress(context.dataDirectory) {
            let token = APIToken.load(context.dataDirectory) ?? "set with --api-token"
            context.console.print("api:      http://\(api) (token \(token))")
        }
        context.console.print("network:  \(status.network)")
        context.console.print("records:  \(status.records) (fingerprint \(status.fingerprint))")
        context.console.print("peers:    \(status.peers.filter(\.connected).count) connected, \(status.peers.count) known")
        context.console.print("pid:      \(status.pid)")
    }

    static let check = Command(spec: CommandSpec(
        name: "check",
        abstract: "Check the data directory's store and every stored chunk; prints ok or each problem.",
        discussion: "Runs SQLite's integrity check on the store and on the chunk index, and hashes every chunk in the pack against its address. Safe while a node runs on the directory. Exits 1 when a problem is found."
    )) { context in
        let node = try context.openNode()
        let problems = try node.store.integrityCheck()
        guard problems == ["ok"] else {
            for problem in problems { context.console.print(problem) }
            throw CommandFailure("\(problems.count) problem(s) in \(context.dataDirectory.path)")
        }
        context.console.print("ok")
    }

    /// The running node's API address, from its `node.json`.
    static func apiAddress(_ directory: DataDirectory) -> String? {
        guard let info = ControlClient.info(directory) else { return nil }
        return info["api"] as? String
    }

    static func askStatus(_ context: CommandContext) throws -> NodeStatus {
        try context.dataDirectory.requireInitialized()
        guard let reply = ControlClient.ask(context.dataDirectory, "status") else {
            throw CommandFailure("no node is running on \(context.dataDirectory.path) (start one with `lanchat run`)")
        }
        guard let status = try? JSONDecoder().decode(NodeStatus.self, from: Data(reply.utf8)) else {
            throw CommandFailure("the running node gave an unreadable answer")
        }
        return status
    }

    static let network = Command(spec: CommandSpec(
        name: "network",
        abstract: "Create a private network key: lanchat network create FILE.",
        discussion: "Share FILE with the members; run nodes with --network-key-file FILE.",
        arguments: [ArgumentSpec(name: "ACTION", help: "create"), ArgumentSpec(name: "FILE", help: "Where to write the key (mode 0600).")]
    )) { context in
        guard context.positional(0) == "create" else { throw UsageError(message: "unknown action '\(context.positional(0))' (expected 'create')") }
        let key = NetworkKey.random()
        try NetworkKeyFile.create(key, at: context.positional(1))
        context.console.print("wrote a new network key to \(context.positional(1)) (network \(key.fingerprint))")
    }
}

/// A private network's key on disk: 64 hex digits and a newline, readable by its owner only.
enum NetworkKeyFile {
    static func create(_ key: NetworkKey, at path: String) throws {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw CommandFailure("cannot create \(path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        let text = Array((Hex.encode(key.secret.copyBytes()) + "\n").utf8)
        guard write(fd, text, text.count) == text.count, fsync(fd) == 0 else { throw CommandFailure("cannot write \(path)") }
    }

    static func load(_ path: String) throws -> NetworkKey {
        var info = stat()
        guard stat(path, &info) == 0 else { throw CommandFailure("cannot read network key file \(path): \(String(cString: strerror(errno)))") }
        guard info.st_mode & 0o077 == 0 else {
            throw CommandFailure("network key file \(path) has permissions \(String(info.st_mode & 0o777, radix: 8)); it must be readable by its owner only (chmod 600 \(path))")
        }
        guard let data = FileManager.default.contents(atPath: path), data.count <= 200,
              let bytes = Hex.decode(String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)),
              let key = try? NetworkKey(bytes: bytes)
        else { throw CommandFailure("network key file \(path) must hold 64 hex digits (made by `lanchat network create`)") }
        return key
    }
}
