import Crypto
import SQLite
import Tree

/// A conversation as a conversation list shows it: its title, its last message and how many
/// messages from others came after the node's user last read it.
public struct ConversationSummary: Equatable, Sendable {
    /// The conversation's key under `/conversations`.
    public var id: String
    /// `meta/title` when it is a string (cut to `maxText` characters).
    public var title: String?
    /// The key of the last message (the greatest, bytewise: push ids sort by time).
    public var lastKey: String?
    /// The last message's fields a list shows: `senderId`, `senderName`, `date`, `text` (cut to
    /// `maxText` characters) and `photo` (true when it has a `photoURL`).
    public var last: JSONValue?
    /// Messages after the read mark whose owner is not the node's user, counted up to `maxUnread`.
    public var unread: Int
    /// The key the node's user has read up to, if any.
    public var readKey: String?
    /// Whether it is a private conversation this node reads (`meta/private`, Protocol.md §11).
    public var isPrivate = false
    /// For a private direct conversation, the other member's user id.
    public var with: String?

    /// Counting stops here: a list shows "99+" beyond it, and the count stays a bounded scan.
    public static let maxUnread = 100
    /// Titles and texts are cut to this many characters, so a huge message makes a small summary.
    public static let maxText = 200

    /// The summary as the node's API sends it (absent fields left out).
    public var json: JSONValue {
        var fields: [String: JSONValue] = ["unread": .number(Double(unread))]
        if let title { fields["title"] = .string(title) }
        if let lastKey { fields["lastKey"] = .string(lastKey) }
        if let last { fields["last"] = last }
        if let readKey { fields["readKey"] = .string(readKey) }
        if isPrivate { fields["private"] = true }
        if let with { fields["with"] = .string(with) }
        return .object(fields)
    }

    /// The fields of a message value that a summary keeps, bounded.
    static func preview(_ message: JSONValue) -> JSONValue {
        guard case let .object(fields) = message else { return .object([:]) }
        var kept: [String: JSONValue] = [:]
        for name in ["senderId", "senderName", "text"] {
            if case let .string(text)? = fields[name] { kept[name] = .string(cut(text)) }
        }
        if case let .number(date)? = fields["date"] { kept["date"] = .number(date) }
        if case let .string(url)? = fields["photoURL"], !url.isEmpty { kept["photo"] = .bool(true) }
        return .object(kept)
    }

    static func cut(_ text: String) -> String {
        text.count <= maxText ? text : String(text.prefix(maxText)) + "…"
    }
}

/// Conversation summaries, worked out on demand from the zones rather than kept in a table.
///
/// Why not a table kept beside the messages: the `zones` table already holds every message as one
/// row keyed by its path, so a conversation's messages are one contiguous range in key order, and
/// its last message is one step down a B-tree (O(log n)) from the end of that range; the unread
/// count is a scan from the read mark that stops at `maxUnread`. A table of summaries would be a
/// second copy to keep equal to the fold under edits, deletes, late older writes, changes of owner
/// and rebuilds; worked out from the zones, a summary is the fold's by construction, and so a pure
/// function of the record set (plus the read mark, which is this node's own and never a record).
/// A list of `maxConversations` conversations costs as many such look-ups.
///
/// Read marks (`read_marks`): the greatest message key the node's user has seen in each
/// conversation. They only move forward, so two tabs or a late request never move one back.
extension Store {
    /// The most conversations a summary list covers (the first ones in key order beyond that are
    /// left out), so a member who creates conversations without end cannot make the list unbounded.
    public static let maxConversations = 2_000

    static let conversationsPath = try! Path("/conversations")

    /// The summaries of every conversation (up to `maxConversations`), for the user `me`.
    public func conversationSummaries(me: String) throws -> [ConversationSummary] {
        try readTransaction {
            let ids = try childKeys(of: Store.conversationsPath, limit: Store.maxConversations)
            return try ids.compactMap { try summaryInTransaction($0, me: me) }
        }
    }

    /// The summary of conversation `id` for user `me`; nil when it holds nothing.
    public func conversationSummary(_ id: String, me: String) throws -> ConversationSummary? {
        try readTransaction { try summaryInTransaction(id, me: me) }
    }

    private func summaryInTransaction(_ id: String, me: String) throws -> ConversationSummary? {
        let conversation = try Store.conversationsPath.appending(id)
        let messages = try conversation.appending("messages")
        let listKey = StoreKey.of(messages)
        let (low, high) = StoreKey.descendants(listKey)
        var summary = ConversationSummary(id: id, unread: 0)
        // The title is a string leaf or nothing: one row read, however large a member made
        // `meta/title` if it is not a string.
        let titleKey = StoreKey.of(try conversation.appending("meta").appending("title"))
        if let title = try db.first("SELECT \(LeafValue.column) FROM leaves WHERE path = ? AND kind IN (3, 4)", [.text(titleKey)], { $0.text(0) }) {
            summary.title = ConversationSummary.cut(title)
        }
        // Shown only by members' nodes, and outranking any write there (Protocol.md §11.5).
        let meta = try conversation.appending("meta")
        let privateKey = StoreKey.of(try meta.appending("private"))
        summary.isPrivate = try db.first("SELECT value FROM leaves WHERE path = ? AND kind = 1", [.text(privateKey)], { $0.int64(0) }) == 1
        if summary.isPrivate, id.hasPrefix("d_") {
            let (membersLow, membersHigh) = StoreKey.descendants(StoreKey.of(try meta.appending("members")))
            try db.query("SELECT path FROM leaves WHERE path >= ? AND path < ? LIMIT 2", [.text(membersLow), .text(membersHigh)]) { row in
                if let uid = try? StoreKey.path(row.text(0)).key, uid != me { summary.with = uid }
            }
        }
        if let (path, value) = try db.first(
            "SELECT zone, \(ZoneStore.valueColumns) FROM zones WHERE zone >= ? AND zone < ? AND value IS NOT NULL ORDER BY zone DESC LIMIT 1",
            [.text(low), .text(high)], { row -> (Path, JSONValue) in
                let path = try StoreKey.path(row.text(0))
                return (path, try ZoneStore.storedValue(row, column: 1, zone: Zone.of(path)))
            }) {
            summary.lastKey = path.key
            summary.last = ConversationSummary.preview(value)
        }
        summary.readKey = try readMark(id)
        if summary.lastKey != nil {
            let from = summary.readKey.map { listKey + String(StoreKey.separator) + $0 }
            let owner = (try? PublicKey(userID: me))?.bytes ?? []
            summary.unread = Int(try db.scalarInt("""
                SELECT count(*) FROM (SELECT 1 FROM zones WHERE zone \(from == nil ? ">=" : ">") ? AND zone < ?
                AND value IS NOT NULL AND owner != ? LIMIT \(ConversationSummary.maxUnread))
                """, [.text(from ?? low), .text(high), .blob(owner)]) ?? 0)
        }
        // Nothing at all: neither a message nor anything else under the conversation.
        if summary.lastKey == nil, summary.title == nil, try childKeys(of: conversation, limit: 1).isEmpty { return nil }
        return summary
    }

    /// The message key the node's user has read conversation `id` up to.
    public func readMark(_ id: String) throws -> String? {
        try db.first("SELECT key FROM read_marks WHERE conversation = ?", [.text(id)]) { $0.text(0) }
    }

    /// Moves the read mark of conversation `id` forward to `key` (never back); returns whether it
    /// moved. Both must be valid keys (Firebase's rules), in NFC as the tree keeps them.
    @discardableResult
    public func markRead(_ id: String, upTo key: String) throws -> Bool {
        let path = try Store.conversationsPath.appending(id).appending("messages").appending(key)
        let segments = path.segments
        let (conversation, message) = (segments[1], segments[3])
        return try transaction {
            if let current = try readMark(conversation), !Array(current.utf8).lexicographicallyPrecedes(Array(message.utf8)) {
                return false
            }
            try db.run("INSERT OR REPLACE INTO read_marks(conversation, key) VALUES (?, ?)", [.text(conversation), .text(message)])
            return true
        }
    }
}
