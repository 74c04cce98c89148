import Foundation
import Node
import Store

/// `open`: the address of the web chat served by the running node, with a one-time login token.
enum OpenCommand {
    static let open = Command(spec: CommandSpec(
        name: "open",
        abstract: "Print the address of the web chat, with a one-time login token.",
        discussion: """
            The running node (lanchat run) serves a chat web app on its local API. Open the printed \
            address in a browser on this machine within 5 minutes: the token works once and becomes \
            a session cookie. Run this again for another browser, or after the node restarts.
            """
    )) { context in
        let directory = context.dataDirectory
        try directory.requireInitialized()
        guard let info = ControlClient.info(directory), let api = info["api"] as? String else {
            throw CommandFailure("no node is running on \(directory.path) (start one with `lanchat run`)")
        }
        let identity = try KeyFile.load(from: directory.keyPath)
        let proof = try LoginRequest.proof(signer: identity, nowMillis: UInt64(Date().timeIntervalSince1970 * 1000))
        guard let reply = ControlClient.ask(directory, "login " + proof) else {
            throw CommandFailure("the running node did not answer")
        }
        guard let object = try? JSONSerialization.jsonObject(with: Data(reply.utf8)) as? [String: Any] else {
            throw CommandFailure("the running node gave an unreadable answer")
        }
        guard let token = object["token"] as? String else {
            throw CommandFailure((object["error"] as? String) ?? "the running node gave no login token")
        }
        context.console.print("http://\(browsable(api))/?login=\(token)")
    }

    /// A wildcard listening address is reached on loopback.
    static func browsable(_ address: String) -> String {
        if address.hasPrefix("0.0.0.0:") { return "127.0.0.1:" + address.dropFirst(8) }
        if address.hasPrefix("[::]:") { return "[::1]:" + address.dropFirst(5) }
        return address
    }
}
