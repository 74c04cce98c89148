import SQLite
import Tree

/// One user in the directory, as search and list return them.
public struct UserEntry: Codable, Sendable, Equatable {
    /// The user id (the key under `/users`).
    public var uid: String
    /// "first last" from the profile; empty when the profile has neither.
    public var name: String
    public var email: String?
    /// The platform the profile records (e.g. "cli").
    public var platform: String?
    /// The profile picture's storage path, when the profile has one.
    public var picture: String?
    /// Whether the user's node is a live peer now. The store cannot know this, so entries from
    /// the store say false; the running node, which knows its sessions, sets it.
    public var online: Bool
    /// When the user's node was last seen, in Unix milliseconds. Nil from the store; the running
    /// node fills it in from what it has heard.
    public var lastSeen: Int64?
    /// "online", "away" or "offline" (Protocol.md §5.7); nil from the store, set by the node.
    public var state: String?

    public init(uid: String, name: String, email: String? = nil, platform: String? = nil, picture: String? = nil,
                online: Bool = false, lastSeen: Int64? = nil) {
        self.uid = uid
        self.name = name
        self.email = email
        self.platform = platform
        self.picture = picture
        self.online = online
        self.lastSeen = lastSeen
    }

    private enum CodingKeys: String, CodingKey {
        case uid, name, email, platform, picture, online, lastSeen, state
    }

    /// Writes every field, absent ones as null, so the JSON shape is always the same.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(uid, forKey: .uid)
        try container.encode(name, forKey: .name)
        try container.encode(email, forKey: .email)
        try container.encode(platform, forKey: .platform)
        try container.encode(picture, forKey: .picture)
        try container.encode(online, forKey: .online)
        try container.encode(lastSeen, forKey: .lastSeen)
        try container.encode(state ?? (online ? "online" : "offline"), forKey: .state)
    }
}

/// Why a directory request was refused.
public enum DirectoryError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The query is empty or only whitespace: searching for it would return everyone.
    case emptyQuery
    /// The query holds only characters that folding removes (accents alone, controls).
    case nothingToSearch(String)
    /// The limit is not a positive number.
    case invalidLimit(Int)
    /// The offset is negative.
    case invalidOffset(Int)

    public var description: String {
        switch self {
        case .emptyQuery: return "the search query is empty; type part of a name or email"
        case let .nothingToSearch(query): return "the search query '\(query)' has no letters or digits to search for"
        case let .invalidLimit(limit): return "the limit must be a positive number, got \(limit)"
        case let .invalidOffset(offset): return "the offset must not be negative, got \(offset)"
        }
    }
}

extension Store {
    /// The users whose name or email contains `query`, case- and accent-insensitively (see
    /// `TextFolding`): first those whose full name is the query, then those with a word of the
    /// name starting with it, then the other matches; each group ordered by folded name (then
    /// user id). At most `limit` entries. `online` and `lastSeen` are left for the node to fill.
    public func searchUsers(_ query: String, limit: Int) throws -> [UserEntry] {
        guard query.contains(where: { !$0.isWhitespace }) else { throw DirectoryError.emptyQuery }
        let folded = TextFolding.fold(query)
        guard !folded.isEmpty else { throw DirectoryError.nothingToSearch(query) }
        guard limit > 0 else { throw DirectoryError.invalidLimit(limit) }
        if !directoryBuilt { try buildUserDirectoryIfNeeded() }
        return try readTransaction {
            try UserDirectory(db: db).search(folded, limit: limit)
        }
    }

    /// Every user in the directory in name order, `limit` at a time from `offset`.
    public func listUsers(limit: Int, offset: Int = 0) throws -> [UserEntry] {
        guard limit > 0 else { throw DirectoryError.invalidLimit(limit) }
        guard offset >= 0 else { throw DirectoryError.invalidOffset(offset) }
        try buildUserDirectoryIfNeeded()
        return try readTransaction { try UserDirectory(db: db).list(limit: limit, offset: offset) }
    }

    /// Number of users in the directory.
    public func userCount() throws -> Int {
        try buildUserDirectoryIfNeeded()
        return try readTransaction { try UserDirectory(db: db).count() }
    }

    /// Called by `apply` after a record's pairs in `uid`'s profile took effect, inside its
    /// transaction: the directory follows the profile as the tree now has it.
    func refreshUserDirectory(uid: String) throws {
        try UserDirectory(db: db).refresh(uid: uid, profile: value(at: try Path(segments: ["users", uid])))
    }

    /// Fills the directory from every profile in the tree, once: a store that held profiles
    /// before migration 2 gets its directory on the first directory request (the migration
    /// cannot read the tree: it has a bare connection). Later, `apply` keeps it current.
    public func buildUserDirectoryIfNeeded() throws {
        guard try db.scalarInt("SELECT value FROM meta WHERE key = 'directory_built'") == 0 else {
            directoryBuilt = true
            return
        }
        try transaction {
            guard try db.scalarInt("SELECT value FROM meta WHERE key = 'directory_built'") == 0 else { return }
            try rebuildUserDirectoryFromTree()
        }
        directoryBuilt = true
    }

    /// Empties the users directory and fills it with every profile in the tree; call inside a
    /// transaction.
    func rebuildUserDirectoryFromTree() throws {
        let users = try Path(segments: ["users"])
        let profiles = try childKeys(of: users).map { uid in (uid: uid, profile: try value(at: try users.appending(uid))) }
        try UserDirectory(db: db).rebuild(profiles)
    }
}

extension Store {
    /// Idle-time upkeep of the users directory: merges its search indexes into one segment when
    /// profiles changed since the last merge. A running node calls this when a sync has gone
    /// quiet, so searches after a large sync run on compact indexes (several times faster).
    /// Returns whether it merged.
    @discardableResult
    public func maintainUserDirectory() throws -> Bool {
        let changes = try db.scalarInt("SELECT value FROM meta WHERE key = 'directory_changes'") ?? 0
        guard changes > 0 else { return false }
        try transaction { try UserDirectory(db: db).compact() }
        return true
    }
}

extension Store {
    /// A user's "first last" from their profile in the tree (the same name the directory shows),
    /// or nil when the profile has none: for message sender names and log lines.
    public func displayName(ofUser uid: String) throws -> String? {
        guard let profile = UserDirectory.Profile(try value(at: try Path(segments: ["users", uid]))) else { return nil }
        let name = profile.name
        return name.isEmpty ? nil : name
    }
}
