import Foundation
import Node
import Store

/// `users search QUERY` and `users list`: the users directory of this node.
enum UserCommands {
    static let all = [users]

    static let defaultSearchLimit = 20
    static let defaultListLimit = 100

    static let users = Command(spec: CommandSpec(
        name: "users",
        abstract: "Search or list the users directory: lanchat users search QUERY | lanchat users list.",
        discussion: """
            search finds users whose name or email contains QUERY, ignoring case and accents \
            ("nguyen" finds "Nguyễn", "준영" finds "박준영"): exact names first, then names with a \
            word starting with QUERY, then other matches, each in name order. list shows everyone \
            in name order. Human output is one line per user: name <email>  uid  platform.
            """,
        arguments: [
            ArgumentSpec(name: "ACTION", help: "search or list"),
            ArgumentSpec(name: "QUERY", help: "What to search for (search only).", optional: true),
        ],
        options: [
            OptionSpec(name: "limit", valueName: "N", help: "At most N users (default: \(defaultSearchLimit) for search, \(defaultListLimit) for list)."),
            OptionSpec(name: "json", valueName: nil, help: "Print the users as a JSON array."),
        ]
    )) { context in
        let action = context.positional(0)
        let limit = try context.positiveInt("limit")
        var entries: [UserEntry]
        switch action {
        case "search":
            guard context.arguments.positionals.count == 2 else { throw UsageError(message: "missing expected argument 'QUERY'") }
            let query = context.positional(1)
            let node = try context.openNode()
            do {
                entries = try node.store.searchUsers(query, limit: limit ?? defaultSearchLimit)
            } catch let error as DirectoryError {
                throw UsageError(message: error.description)
            }
            if entries.isEmpty, !context.arguments.flag("json") {
                context.console.printError("no users match '\(query)'")
                return
            }
        case "list":
            guard context.arguments.positionals.count == 1 else {
                throw UsageError(message: "unexpected argument '\(context.positional(1))' (list takes no query)")
            }
            let node = try context.openNode()
            entries = try node.store.listUsers(limit: limit ?? defaultListLimit)
        default:
            throw UsageError(message: "unknown action '\(action)' (expected 'search' or 'list')")
        }
        // A running node knows who is live and when each peer was last heard from.
        if let reply = ControlClient.ask(context.dataDirectory, "presence"),
           let presence = try? JSONDecoder().decode([String: Presence].self, from: Data(reply.utf8)) {
            for i in entries.indices {
                if let live = presence[entries[i].uid] {
                    entries[i].online = live.online
                    entries[i].lastSeen = live.lastSeen
                }
            }
        }
        if context.arguments.flag("json") {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            context.console.print(String(decoding: try encoder.encode(entries), as: UTF8.self))
            return
        }
        for entry in entries { context.console.print(line(entry)) }
    }

    /// `name <email>  uid  platform`, leaving out what the profile does not have.
    static func line(_ entry: UserEntry) -> String {
        var text = entry.name.isEmpty ? "(no name)" : entry.name
        if let email = entry.email, !email.isEmpty { text += " <\(email)>" }
        text += "  " + entry.uid
        if let platform = entry.platform, !platform.isEmpty { text += "  " + platform }
        if entry.online { text += "  online" }
        return text
    }

    /// A user's liveness as the running node reports it.
    struct Presence: Decodable {
        let online: Bool
        let lastSeen: Int64?
    }
}
