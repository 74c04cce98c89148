import Foundation
import Tree

/// `send` and `messages`: chat as the Firebase chat apps lay it out, under
/// `/conversations/<id>/messages/<pushId>` = {senderId, senderName, date, text}.
enum ChatCommands {
    static let all = [send, messages]

    static let conversationArgument = ArgumentSpec(name: "CONVERSATION", help: "The conversation id, e.g. general.")

    static func messagesPath(_ context: CommandContext) throws -> Path {
        do {
            return try Path(segments: ["conversations", context.positional(0), "messages"])
        } catch {
            throw UsageError(message: "invalid conversation id '\(context.positional(0))': \(error)")
        }
    }

    static let send = Command(spec: CommandSpec(
        name: "send",
        writes: true,
        abstract: "Send a text message to a conversation; print its key.",
        arguments: [conversationArgument, ArgumentSpec(name: "TEXT", help: "The message text.")]
    )) { context in
        let path = try messagesPath(context)
        let text = context.positional(1)
        guard !text.isEmpty else { throw UsageError(message: "the message text is empty") }
        let node = try context.openNode()
        let message: JSONValue = .object([
            "senderId": .string(node.userID),
            "senderName": .string(try node.displayName()),
            "date": .object([".sv": .string("timestamp")]),
            "text": .string(text),
        ])
        let (key, _) = try node.store.push(path, value: message, signer: node.identity, nowMillis: context.console.nowMillis())
        context.console.print(key)
    }

    static let messages = Command(spec: CommandSpec(
        name: "messages",
        abstract: "Print a conversation's messages, oldest first, one per line.",
        arguments: [conversationArgument],
        options: [OptionSpec(name: "limit", valueName: "N", help: "Only the last N messages.")]
    )) { context in
        let path = try messagesPath(context)
        let limit = try context.positiveInt("limit") ?? .max
        let node = try context.openNode()
        // Push ids sort by time, so the newest N keys are the last N in key order.
        let keys = try node.store.childKeys(of: path, limit: limit, reverse: true).reversed()
        for key in keys {
            let message = try node.store.value(at: path.appending(key))
            context.console.print(MessageLine.format(message))
        }
    }
}

/// One message as a line: "2026-11-30 14:03  Alice Smith: hello".
enum MessageLine {
    static func format(_ message: JSONValue) -> String {
        guard case let .object(fields) = message else { return message.serialized() }
        var when = "????-??-?? ??:??"
        if case let .number(millis)? = fields["date"] {
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.dateFormat = "yyyy-MM-dd HH:mm"
            when = formatter.string(from: Date(timeIntervalSince1970: millis / 1000))
        }
        var who = "?"
        if case let .string(name)? = fields["senderName"] { who = name } else if case let .string(id)? = fields["senderId"] { who = id }
        var body = ""
        if case let .string(text)? = fields["text"] { body = text }
        if case let .string(photo)? = fields["photoURL"] { body += (body.isEmpty ? "" : " ") + "[photo \(photo)]" }
        return "\(when)  \(who): \(body.replacingOccurrences(of: "\n", with: " "))"
    }
}
