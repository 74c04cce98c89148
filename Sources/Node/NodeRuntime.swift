import Crypto
import Dispatch
import Foundation
import Store
import Sync
import Transport
#if canImport(Glibc)
import Glibc
#endif

/// A node running on a data directory: holds the directory's lock (one node per directory),
/// publishes `node.json` for the CLI, and owns the node and its control channel.
public final class NodeRuntime: @unchecked Sendable {
    public let node: Node
    private let control: ControlServer
    private let directory: DataDirectory
    private let lockFD: Int32

    public static func infoPath(_ directory: DataDirectory) -> String { directory.path + "/node.json" }

    public init(directory: DataDirectory, network: NetworkKey, config: NodeConfig) throws {
        try directory.requireInitialized()
        self.directory = directory
        lockFD = open(directory.path + "/node.lock", O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard lockFD >= 0 else { throw StoreError.io(path: directory.path + "/node.lock", reason: String(cString: strerror(errno))) }
        guard flock(lockFD, LOCK_EX | LOCK_NB) == 0 else {
            close(lockFD)
            throw StoreError.io(path: directory.path, reason: "a node is already running on this data directory")
        }
        let identity = try KeyFile.load(from: directory.keyPath)
        let store = try Store(path: directory.databasePath)
        node = try Node(store: store, identity: identity, network: network, config: config)
        control = try ControlServer(node: node)
    }

    /// Starts the node and its control channel.
    public func start() throws {
        try node.start()
        node.queue.sync { control.start() }
    }

    /// Publishes `node.json` (pid, control port, session address, and `extra` such as the API
    /// address), which tells the CLI that the node runs and how to reach it.
    public func publish(extra: [String: String] = [:]) throws {
        var info: [String: Any] = ["pid": Int(getpid()), "control": Int(control.port), "listen": node.listenAddress.description]
        for (key, value) in extra { info[key] = value }
        let data = try JSONSerialization.data(withJSONObject: info)
        let path = NodeRuntime.infoPath(directory)
        try data.write(to: URL(fileURLWithPath: path + ".tmp"))
        rename(path + ".tmp", path)
    }

    public func stop() {
        unlink(NodeRuntime.infoPath(directory))
        node.queue.sync { control.close() }
        node.stop()
        flock(lockFD, LOCK_UN)
        close(lockFD)
    }
}

/// The CLI's side of the control channel: finds the running node of a data directory and asks it.
public enum ControlClient {
    /// The running node's `node.json`, or `nil` when no node runs on the directory.
    public static func info(_ directory: DataDirectory) -> [String: Any]? {
        guard let data = FileManager.default.contents(atPath: NodeRuntime.infoPath(directory)),
              let info = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
              let pid = info["pid"] as? Int, kill(pid_t(pid), 0) == 0 else { return nil }
        return info
    }

    /// The node's answer to `request`, or `nil` when no node runs on the directory.
    public static func ask(_ directory: DataDirectory, _ request: String, timeoutSeconds: Int = 5) -> String? {
        guard let info = info(directory), let port = info["control"] as? Int else { return nil }
        guard let address = try? SocketAddress(host: "127.0.0.1", port: UInt16(clamping: port)),
              let fd = try? BlockingSocket.connect(to: address, timeoutSeconds: timeoutSeconds) else { return nil }
        defer { close(fd) }
        let line = Array((request + "\n").utf8)
        guard send(fd, line, line.count, Int32(MSG_NOSIGNAL)) == line.count else { return nil }
        var reply = [UInt8]()
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = recv(fd, &chunk, chunk.count, 0)
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { break }
            reply += chunk[0..<n]
            if reply.count > 16 << 20 { return nil }
        }
        return reply.isEmpty ? nil : String(decoding: reply, as: UTF8.self).trimmingCharacters(in: .newlines)
    }
}
