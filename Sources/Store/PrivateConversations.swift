import Crypto
import Private
import SQLite
import Tree
import Wire

/// Private conversations in the store (Protocol.md §11): every node stores their records; the
/// node of a member also folds what it may read into its tree, as if the sealed writes were
/// plain ones, and nothing else does.
///
/// Membership can change what earlier records mean (a key record arriving after the writes it
/// opens; an epoch that removes a member whose later writes arrived first), so when a key or
/// leave record arrives the conversation's sealed writes are judged again: writes that now count
/// are applied; if one that counted no longer does, the tree is folded again from the records,
/// which is rare (a removed member writing before this node learned of the removal).
extension Store {
    static let privateDeviceMetaKey = "private_device"

    /// Opens private conversations with `identity`'s device key from now on, and folds in what
    /// it may read that the store does not show yet (records stored while no key was given, or
    /// a store last used with another identity, which is folded again whole).
    public func usePrivateKeys(of identity: PrivateKey) throws {
        privateIdentity = identity
        privateDevice = identity.x25519()
        privateControl = nil
        memberships = [:]
        let marker = Hex.encode(privateDevice!.publicKey.bytes)
        try transaction {
            let stored = try db.first("SELECT value FROM meta WHERE key = ?", [.text(Store.privateDeviceMetaKey)]) { $0.text(0) }
            guard stored != marker else { return }
            if stored != nil {
                try refoldEverything()
            } else {
                for conversation in try controlRecords().keys.sorted() { try materializePrivate(conversation) }
            }
            try db.run("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", [.text(Store.privateDeviceMetaKey), .text(marker)])
        }
    }

    /// The private conversation a path is in, if any.
    static func privateConversation(of path: Path) -> String? {
        let s = path.segments
        guard s.count >= 2, s[0] == "conversations", ConversationID.isPrivate(s[1]) else { return nil }
        return s[1]
    }

    /// Whether a plain pair lands in a private conversation, where only sealed writes count.
    static func reachesPrivate(_ path: Path) -> Bool { privateConversation(of: path) != nil }

    /// A plain value written at the root or at `/conversations`, less any private conversation.
    static func strippingPrivate(_ value: JSONValue, at path: Path) -> JSONValue {
        func withoutPrivate(_ conversations: JSONValue) -> JSONValue {
            guard case var .object(members) = conversations else { return conversations }
            for key in members.keys where ConversationID.isPrivate(key) { members[key] = nil }
            return members.isEmpty ? .null : .object(members)
        }
        switch path.segments {
        case []:
            guard case var .object(top) = value, let conversations = top["conversations"] else { return value }
            top["conversations"] = withoutPrivate(conversations)
            if top["conversations"] == .null { top["conversations"] = nil }
            return top.isEmpty ? .null : .object(top)
        case ["conversations"]:
            return withoutPrivate(value)
        default:
            return value
        }
    }

    /// A newly stored key, sealed write or leave record.
    ///
    /// Only conversations this node holds a key of are kept in memory and judged again when
    /// their membership changes: key records of any other (made by anyone, for anyone) cost one
    /// try of their sealed keys and nothing more, and leaves there cost nothing.
    func applyPrivate(_ record: Record, seq: Int64) throws {
        guard let conversation = record.privateConversationID else { return }
        guard !rebuildingTree else { return }  // private conversations are folded at the end
        guard let device = privateDevice else {
            // Shown once a key is given (`usePrivateKeys` folds what is missing).
            try db.run("DELETE FROM meta WHERE key = ?", [.text(Store.privateDeviceMetaKey)])
            return
        }
        switch record.body {
        case let .sealedWrite(body):
            try applySealed(record, body, seq: seq, membership: try membership(of: body.conversation))
        case let .groupKey(body):
            guard ConversationID.mayKey(body, author: record.author) else { return }  // counts for nothing
            if try controlRecords()[conversation] == nil {
                guard KeySchedule.openKey(body, with: device) != nil else { return }  // still none of ours
                privateControl![conversation] = try controlRecords(of: conversation)  // this one included
            } else {
                privateControl![conversation]!.append(record)
            }
            memberships[conversation] = nil
            try membershipChanged(conversation, by: record)
        case .leave:
            guard try controlRecords()[conversation] != nil else { return }
            privateControl![conversation]!.append(record)
            memberships[conversation] = nil
            try membershipChanged(conversation, by: record)
        default:
            return
        }
    }

    /// Applies the pairs of a sealed write if this node may read it and they count.
    func applySealed(_ record: Record, _ body: SealedWriteBody, seq: Int64, membership: Membership) throws {
        guard membership.admits(author: record.author, order: record.order, epoch: body.epoch),
              let key = membership.key(of: body.epoch),
              let pairs = try? KeySchedule.openWrite(body, key: key, author: record.author) else { return }
        try applyPairs(pairs, encodings: pairs.map { TreeValueCodec.encode($0.value).encoded()[...] }, of: record, seq: seq)
    }

    /// The pairs of a sealed write this node reads and that count, for folds that read records
    /// again; nil otherwise.
    func openedPairs(_ record: Record) -> [WritePair]? {
        guard case let .sealedWrite(body) = record.body, privateDevice != nil,
              let membership = try? membership(of: body.conversation),
              membership.admits(author: record.author, order: record.order, epoch: body.epoch),
              let key = membership.key(of: body.epoch) else { return nil }
        return try? KeySchedule.openWrite(body, key: key, author: record.author)
    }

    /// A key or leave record (`record`, stored already) changed who is in `conversation`.
    func membershipChanged(_ conversation: String, by record: Record) throws {
        let before = try membership(of: conversation, leavingOut: record.id)
        let after = try membership(of: conversation)
        var applyNow = [(Record, SealedWriteBody, Int64)]()
        for (seq, write, body) in try sealedWrites(of: conversation) {
            let was = before.admits(author: write.author, order: write.order, epoch: body.epoch)
            let now = after.admits(author: write.author, order: write.order, epoch: body.epoch)
            if was && !now {
                try refoldEverything()  // a write that counted no longer does
                return
            }
            if now && !was { applyNow.append((write, body, seq)) }
        }
        for (write, body, seq) in applyNow { try applySealed(write, body, seq: seq, membership: after) }
        try writeMembership(conversation, after)
    }

    /// Folds in everything of `conversation` this node may read: its membership and every
    /// sealed write that counts (applying one twice changes nothing).
    func materializePrivate(_ conversation: String) throws {
        let membership = try membership(of: conversation)
        for (seq, write, body) in try sealedWrites(of: conversation) {
            try applySealed(write, body, seq: seq, membership: membership)
        }
        try writeMembership(conversation, membership)
    }

    /// The conversation's meta as the membership says: `private`, `title`, `members` and, for
    /// a group, `creator`, under a write order above every record's (all-ones clock), rising
    /// with the epoch shown, so no member's write there can change it.
    func writeMembership(_ conversation: String, _ membership: Membership) throws {
        guard let shown = membership.epochs.last(where: { membership.opened[$0.id] != nil }),
              let meta = membership.opened[shown.id]?.meta else { return }
        var order = [UInt8](repeating: 0xFF, count: 16)
        for shift in stride(from: 56, through: 0, by: -8) { order.append(UInt8(truncatingIfNeeded: shown.body.epoch >> UInt64(shift))) }
        for shift in stride(from: 56, through: 0, by: -8) { order.append(UInt8(truncatingIfNeeded: shown.clock >> UInt64(shift))) }
        order += shown.id.bytes + [UInt8](repeating: 0xFF, count: 8)
        let base = try Path(segments: ["conversations", conversation, "meta"])
        let left = Set(meta.members).subtracting(membership.currentMembers ?? Set(meta.members))
        var members = [String: JSONValue]()
        for member in meta.members where !left.contains(member) { members[member.userID] = true }
        var fields: [(String, JSONValue)] = [("private", true), ("title", .string(meta.title)), ("members", .object(members))]
        if let creator = membership.creator { fields.append(("creator", .string(creator.userID))) }
        for (key, value) in fields {
            try materializer.apply(path: try base.appending(key), value: value, order: order)
        }
    }

    /// The membership of `conversation` as this node's keys open it (cached until its key or
    /// leave records change). `leavingOut` gives it as it was before that record arrived.
    func membership(of conversation: String, leavingOut excluded: Digest32? = nil) throws -> Membership {
        if excluded == nil, let cached = memberships[conversation] { return cached }
        guard let device = privateDevice else {
            return Membership(conversation: conversation, records: [], device: X25519PrivateKey())
        }
        let records = (try controlRecords()[conversation] ?? []).filter { $0.id != excluded }
        guard !records.isEmpty else { return Membership(conversation: conversation, records: [], device: device) }
        let membership = Membership(conversation: conversation, records: records, device: device)
        if excluded == nil { memberships[conversation] = membership }
        return membership
    }

    /// Key and leave records of the conversations this node holds a key of (one of their key
    /// records that counts opens for its device), by conversation: read from the store once and
    /// kept up to date by `applyPrivate`. Empty while no device key is given.
    func controlRecords() throws -> [String: [Record]] {
        if let known = privateControl { return known }
        guard let device = privateDevice else { return [:] }
        var found = [String: [Record]]()
        try scanControlRecords(of: nil) { found[$0, default: []].append($1) }
        found = found.filter { _, records in
            records.contains { record in
                guard case let .groupKey(body) = record.body else { return false }
                return ConversationID.mayKey(body, author: record.author) && KeySchedule.openKey(body, with: device) != nil
            }
        }
        privateControl = found
        return found
    }

    /// The key and leave records of one conversation, read from the store.
    func controlRecords(of conversation: String) throws -> [Record] {
        var found = [Record]()
        try scanControlRecords(of: conversation) { found.append($1) }
        return found
    }

    /// Calls `body` with every key and leave record (of `conversation`, or of all).
    private func scanControlRecords(of conversation: String?, _ body: (String, Record) -> Void) throws {
        try db.query("SELECT bytes FROM records WHERE kind IN (?, ?)",
                      [.integer(Int64(RecordKind.groupKey.rawValue)), .integer(Int64(RecordKind.leave.rawValue))]) { row in
            guard let record = try? Record.decode(row.blob(0), verify: false), let id = record.privateConversationID,
                  conversation == nil || id == conversation else { return }
            body(id, record)
        }
    }

    /// Every sealed write of `conversation`, with its arrival number.
    func sealedWrites(of conversation: String) throws -> [(Int64, Record, SealedWriteBody)] {
        var found = [(Int64, Record, SealedWriteBody)]()
        try db.query("SELECT seq, bytes FROM records WHERE kind = ?", [.integer(Int64(RecordKind.sealedWrite.rawValue))]) { row in
            guard let record = try? Record.decode(row.blob(1), verify: false), case let .sealedWrite(body) = record.body,
                  body.conversation == conversation else { return }
            found.append((row.int64(0), record, body))
        }
        return found
    }

    /// Signs and stores `pairs`, all in one private conversation, as a sealed write in its
    /// current epoch. Throws `permissionDenied` when this node's user may not write there (not
    /// a member, or no key given to this store).
    func writeSealed(_ pairs: [WritePair], conversation: String, signer: PrivateKey, nowMillis: UInt64) throws -> Record {
        guard privateDevice != nil, privateIdentity?.publicKey == signer.publicKey,
              let (epoch, open) = try membership(of: conversation).writableEpoch(for: signer.publicKey) else {
            throw StoreError.permissionDenied(path: "/conversations/\(conversation)")
        }
        let body = try KeySchedule.sealWrite(pairs, conversation: conversation, epoch: epoch.id, key: open.key, author: signer.publicKey)
        return try writeRecord(.sealedWrite(body), signer: signer, nowMillis: nowMillis)
    }
}

extension Store {
    /// Another process (a CLI command on the same data directory) stored `records`: key and
    /// leave records among them change memberships this store keeps in memory, so those are
    /// read again and what they let this node read is folded in (applying twice changes nothing).
    public func privateRecordsStoredElsewhere(_ records: [Record]) throws {
        let changed = Set(records.compactMap { $0.kind == .sealedWrite ? nil : $0.privateConversationID })
        guard !changed.isEmpty else { return }
        privateControl = nil
        for conversation in changed { memberships[conversation] = nil }
        guard privateDevice != nil else { return }
        try transaction { for conversation in changed.sorted() { try materializePrivate(conversation) } }
    }
}
