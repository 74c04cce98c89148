import Crypto
import Foundation
import Store
import Tree

/// `dm` and `group`: private conversations (Protocol.md §11). Their messages are read and sent
/// with `send`, `messages` and `send-image` like any conversation's: the store seals and opens them.
enum PrivateCommands {
    static let all = [dm, group]

    static func userID(_ text: String) throws -> PublicKey {
        do { return try PublicKey(userID: text) } catch { throw UsageError(message: "'\(text)' is not a user id") }
    }

    static let dm = Command(spec: CommandSpec(
        name: "dm",
        writes: true,
        abstract: "Print the id of the private direct conversation with a user, creating it if needed.",
        discussion: "The id is derived from the two user ids, so both sides get the same one. Only the two of you can read it.",
        arguments: [ArgumentSpec(name: "USER_ID", help: "The other user's id.")]
    )) { context in
        let other = try userID(context.positional(0))
        let node = try context.openNode()
        context.console.print(try node.store.openDirect(with: other, signer: node.identity, nowMillis: context.console.nowMillis()))
    }

    static let group = Command(spec: CommandSpec(
        name: "group",
        writes: true,
        abstract: "Make and change private groups that only their members can read.",
        discussion: """
            lanchat group create TITLE [--member USER_ID]... [--history]   print the new group's id
            lanchat group add CID USER_ID        (the creator) add a member
            lanchat group remove CID USER_ID     (the creator) remove a member; they read nothing sent after
            lanchat group leave CID              leave the group
            lanchat group members CID            print the members, one per line
            With --history, members added later read the messages sent before they joined.
            """,
        arguments: [ArgumentSpec(name: "ACTION", help: "create, add, remove, leave or members."),
                    ArgumentSpec(name: "ARG", help: "The title (create) or the conversation id."),
                    ArgumentSpec(name: "USER_ID", help: "The member to add or remove.", optional: true)],
        options: [OptionSpec(name: "member", valueName: "USER_ID", help: "A member of the new group (repeatable).", repeatable: true),
                  OptionSpec(name: "history", valueName: nil, help: "Members added later read earlier messages too.")]
    )) { context in
        let action = context.positional(0)
        let argument = context.positional(1)
        let count = context.arguments.positionals.count
        let now = context.console.nowMillis()
        switch action {
        case "create":
            guard count == 2 else { throw UsageError(message: "group create takes a title and --member options") }
            let members = try context.arguments.values("member").map(userID)
            let node = try context.openNode()
            context.console.print(try node.store.createGroup(title: argument, members: members, sharesHistory: context.arguments.flag("history"),
                                                             signer: node.identity, nowMillis: now))
        case "add", "remove":
            guard count == 3 else { throw UsageError(message: "group \(action) takes a conversation id and a user id") }
            let member = try userID(context.positional(2))
            let node = try context.openNode()
            try node.store.changeMembers(argument, adding: action == "add" ? [member] : [], removing: action == "remove" ? [member] : [],
                                         signer: node.identity, nowMillis: now)
        case "leave":
            guard count == 2 else { throw UsageError(message: "group leave takes a conversation id") }
            let node = try context.openNode()
            try node.store.leaveGroup(argument, signer: node.identity, nowMillis: now)
        case "members":
            guard count == 2 else { throw UsageError(message: "group members takes a conversation id") }
            let node = try context.openNode()
            guard let info = try node.store.privateInfo(argument) else {
                throw CommandFailure("not a member of a private conversation \(argument)")
            }
            for member in info.members {
                let name = try node.store.displayName(ofUser: member.userID) ?? ""
                let role = member == info.creator ? " (creator)" : ""
                context.console.print("\(member.userID)  \(name)\(role)".trimmingCharacters(in: .whitespaces))
            }
        default:
            throw UsageError(message: "unknown group action '\(action)' (create, add, remove, leave or members)")
        }
    }
}
