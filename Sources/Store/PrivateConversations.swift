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
/// are applied; if one that counted no longer does, the conversation's subtree is folded again
/// from its records (`refoldConversation`), which is rare (a removed member writing before this
/// node learned of the removal).
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
        boxKeys = [:]
        unheldSlots = [:]
        keyTrials.removeAll()
        let marker = Hex.encode(privateDevice!.publicKey.bytes)
        try transaction {
            try forgetTrialsUnlessFor(marker)
            let stored = try db.first("SELECT value FROM meta WHERE key = ?", [.text(Store.privateDeviceMetaKey)]) { $0.text(0) }
            if stored != marker {
                if stored != nil {
                    try refoldEverything()
                } else {
                    for conversation in try controlRecords().keys.sorted() { try materializePrivate(conversation) }
                }
                try db.run("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", [.text(Store.privateDeviceMetaKey), .text(marker)])
            }
            // Key records not tried yet (stored without a key, or for another device) are
            // queued by `controlRecords()` and tried as the budgets allow, these first.
            _ = try controlRecords()
            try runKeyTrials()
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
    /// trial of their sealed keys, under their author's budget (`KeyTrialQueue`), and nothing
    /// more, and leaves there cost nothing.
    ///
    /// `opened` is the write opened already off the queue, if it was (`SealedWriteKeys`).
    func applyPrivate(_ record: Record, seq: Int64, opened: OpenedSealedWrite? = nil) throws {
        guard let conversation = record.privateConversationID else { return }
        if case let .sealedWrite(body) = record.body { try Store.indexSealedWrite(record, body, seq: seq, in: db) }
        try Store.indexControlRecord(record, seq: seq, in: db)
        guard !rebuildingTree else { return }  // private conversations are folded at the end
        guard let device = privateDevice else {
            // Shown once a key is given (`usePrivateKeys` folds what is missing).
            try db.run("DELETE FROM meta WHERE key = ?", [.text(Store.privateDeviceMetaKey)])
            return
        }
        switch record.body {
        case let .sealedWrite(body):
            try applySealed(record, body, seq: seq, membership: try membership(of: body.conversation), opened: opened)
        case let .groupKey(body):
            guard ConversationID.mayKey(body, author: record.author) else { return }  // counts for nothing
            // A key record later in write order than one of the same author and number seen
            // before never counts (Protocol.md §11.5): its boxes are not tried.
            if let kept = try controlRecords()[conversation] {
                if let first = kept.first(where: { Store.sameSlot($0, as: record, body) }), first.order < record.order {
                    return try setOpens(conversation, seq: seq, false)
                }
            } else {
                let slot = UnheldSlot(conversation: conversation, author: record.author, epoch: body.epoch)
                if let seen = unheldSlots[slot], seen < record.order { return try setOpens(conversation, seq: seq, false) }
                unheldSlots[slot] = record.order
            }
            // This node's own key records (its user's groups) are tried at once; any other
            // author's wait for their turn and budget (`KeyTrialQueue`), most often none.
            if record.author == privateIdentity?.publicKey {
                try tryKeyRecord(record, body, seq: seq, device: device)
            } else {
                keyTrials.enqueue(seq: seq, author: record.author, boxes: body.boxes.count)
            }
            try runKeyTrials()
        case .leave:
            guard try controlRecords()[conversation] != nil else { return }
            var (kept, before) = try controlWithout(record, of: conversation, device: device)
            // A leave counts from its author's earliest one: later ones change nothing.
            if let index = kept.firstIndex(where: { $0.kind == .leave && $0.author == record.author }) {
                guard record.clock < kept[index].clock else { return }
                kept.remove(at: index)
            }
            kept.append(record)
            privateControl![conversation] = kept
            // A leave by someone in no epoch this node opened changes no member set now: the
            // membership in memory stays, and the key record that would add them is resolved
            // with the leave. A flood of leaves by strangers costs no resolution each.
            guard before.opened.values.contains(where: { $0.meta.members.contains(record.author) }) else { return }
            memberships[conversation] = nil
            try membershipChanged(conversation, before: before)
        default:
            return
        }
    }

    /// The key and leave records kept for a held conversation, less `record` (which they hold
    /// already when they were just read from the store, in the transaction that stored it),
    /// and the membership they make.
    func controlWithout(_ record: Record, of conversation: String, device: X25519PrivateKey) throws -> ([Record], Membership) {
        let kept = try controlRecords()[conversation] ?? []
        guard kept.contains(where: { $0.id == record.id }) else { return (kept, try membership(of: conversation)) }
        // Read again: what counts without it may be a record it took the place of.
        let others = Store.counting(try controlRecords(of: conversation).filter { $0.id != record.id })
        return (others, resolve(conversation, others, device: device))
    }

    /// Whether `kept` is a key record of the same author and epoch number as `record`.
    static func sameSlot(_ kept: Record, as record: Record, _ body: GroupKeyBody) -> Bool {
        guard case let .groupKey(other) = kept.body else { return false }
        return kept.author == record.author && other.epoch == body.epoch
    }

    /// The key and leave records of a conversation that can count: the first key record of
    /// each author and epoch number, the earliest leave of each author.
    static func counting(_ records: [Record]) -> [Record] {
        var keys = [EpochSlotKey: Record](), leaves = [PublicKey: Record]()
        for record in records {
            switch record.body {
            case let .groupKey(body):
                let slot = EpochSlotKey(author: record.author, epoch: body.epoch)
                if let kept = keys[slot], kept.order < record.order { continue }
                keys[slot] = record
            case .leave:
                if let kept = leaves[record.author], kept.clock <= record.clock { continue }
                leaves[record.author] = record
            default:
                continue
            }
        }
        return Array(keys.values) + Array(leaves.values)
    }

    /// Applies the pairs of a sealed write if this node may read it and they count. A write
    /// opened ahead (`opened`) under the very key the membership gives its epoch is not opened
    /// again: opening is pure, so the same key gives the same pairs, or the same failure.
    func applySealed(_ record: Record, _ body: SealedWriteBody, seq: Int64, membership: Membership,
                     opened ahead: OpenedSealedWrite? = nil) throws {
        guard membership.admits(author: record.author, order: record.order, epoch: body.epoch),
              let key = membership.key(of: body.epoch) else { return }
        let opened: (pairs: [WritePair], valueBytes: [ArraySlice<UInt8>])?
        if let ahead, ahead.key === key {
            opened = ahead.pairs
        } else {
            opened = try? KeySchedule.openWriteAndValueBytes(body, key: key, author: record.author)
        }
        guard let opened else { return }
        try applyPairs(opened.pairs, encodings: opened.valueBytes, of: record, seq: seq)
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

    /// A key or leave record (stored already, and kept in `privateControl`) changed who is in
    /// `conversation`; `before` is its membership without it.
    ///
    /// Only the writes the change can judge differently are read (`Membership.changes`): those
    /// sealed in an epoch opened on one side only, and those of the authors whose membership
    /// differs, over the clocks where it does. A member joining or leaving a conversation of
    /// many messages costs the few writes it concerns, not a pass over them all.
    func membershipChanged(_ conversation: String, before: Membership) throws {
        let after = try membership(of: conversation)
        var applyNow = [(Record, SealedWriteBody, Int64)]()
        let candidates = try sealedWrites(of: conversation, changing: after.changes(since: before))
        judgedOnMembershipChange = candidates.count
        for (seq, write, body) in candidates {
            let was = before.admits(author: write.author, order: write.order, epoch: body.epoch)
            let now = after.admits(author: write.author, order: write.order, epoch: body.epoch)
            if was && !now {
                try refoldConversation(conversation)  // a write that counted no longer does
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
        for (seq, write, body) in try sealedWrites(of: conversation, openedIn: membership) {
            try applySealed(write, body, seq: seq, membership: membership)
        }
        try writeMembership(conversation, membership)
    }

    /// The conversation's meta as the membership says: `private`, `title`, `members` and, for
    /// a group, `creator`, under a write order above every record's (all-ones clock), rising
    /// with the epoch shown and with the members who left it, so no member's write there can change it.
    func writeMembership(_ conversation: String, _ membership: Membership) throws {
        guard let shown = membership.epochs.last(where: { membership.opened[$0.id] != nil }),
              let meta = membership.opened[shown.id]?.meta else { return }
        var order = [UInt8](repeating: 0xFF, count: 16)
        for shift in stride(from: 56, through: 0, by: -8) { order.append(UInt8(truncatingIfNeeded: shown.body.epoch >> UInt64(shift))) }
        for shift in stride(from: 56, through: 0, by: -8) { order.append(UInt8(truncatingIfNeeded: shown.clock >> UInt64(shift))) }
        order += shown.id.bytes + [UInt8](repeating: 0xFF, count: 8)
        let base = try Path(segments: ["conversations", conversation, "meta"])
        let left = Set(meta.members).subtracting(membership.currentMembers ?? Set(meta.members))
        // Members who left stop showing within the same epoch: a list without them must replace
        // the one with them, so the order rises with their number too (leaves only add up within
        // an epoch). Appended rather than in place, so it also sorts above what an earlier
        // version of this order wrote.
        for shift in stride(from: 56, through: 0, by: -8) { order.append(UInt8(truncatingIfNeeded: UInt64(left.count) >> UInt64(shift))) }
        var members = [String: JSONValue]()
        for member in meta.members where !left.contains(member) { members[member.userID] = true }
        var fields: [(String, JSONValue)] = [("private", true), ("title", .string(meta.title)), ("members", .object(members))]
        if let creator = membership.creator { fields.append(("creator", .string(creator.userID))) }
        for (key, value) in fields {
            try materializer.apply(path: try base.appending(key), value: value, order: order)
        }
    }

    /// The membership of `conversation` as this node's keys open it (cached until its key or
    /// leave records change).
    func membership(of conversation: String) throws -> Membership {
        if let cached = memberships[conversation] { return cached }
        guard let device = privateDevice else {
            return Membership(conversation: conversation, records: [], device: X25519PrivateKey())
        }
        let membership = resolve(conversation, try controlRecords()[conversation] ?? [], device: device)
        memberships[conversation] = membership
        return membership
    }

    /// Membership from the given key and leave records, each record's boxes tried once.
    func resolve(_ conversation: String, _ records: [Record], device: X25519PrivateKey) -> Membership {
        Membership(
            conversation: conversation, epochs: records.compactMap(EpochRecord.init),
            leaves: records.compactMap { r in
                guard case let .leave(body) = r.body, body.conversation == conversation else { return nil }
                return LeaveEvent(r)
            },
            openBox: { openBox($0.id, $0.body, device: device) })
    }

    /// The epoch key a key record's sealed keys give `device`, if one is for it. Each record's
    /// boxes are tried once (they never change): membership is resolved again on every key or
    /// leave record, and trying up to 1,000 boxes of every epoch each time would cost a group
    /// that changes often more with each change.
    func openBox(_ id: Digest32, _ body: GroupKeyBody, device: X25519PrivateKey) -> EpochKey? {
        if let known = boxKeys[id] { return known }
        keyRecordsTried += 1
        boxesTried += body.boxes.count
        let key = KeySchedule.openKey(body, with: device)
        boxKeys[id] = .some(key)
        return key
    }

    /// The sealed writes of `conversation` that can count (those sealed in an epoch
    /// `membership` opens: no other is ever admitted), with their arrival numbers, in arrival order.
    func sealedWrites(of conversation: String, openedIn membership: Membership) throws -> [(Int64, Record, SealedWriteBody)] {
        var found = [Int64: (Record, SealedWriteBody)]()
        for epoch in membership.opened.keys {
            try indexedSealedWrites(of: conversation, epoch: epoch) { found[$0] = ($1, $2) }
        }
        return found.keys.sorted().map { ($0, found[$0]!.0, found[$0]!.1) }
    }

    /// The sealed writes of `conversation` that `change` may judge differently, in arrival order.
    func sealedWrites(of conversation: String, changing change: MembershipChange) throws -> [(Int64, Record, SealedWriteBody)] {
        var found = [Int64: (Record, SealedWriteBody)]()
        for epoch in change.epochs {
            try indexedSealedWrites(of: conversation, epoch: epoch) { found[$0] = ($1, $2) }
        }
        for epoch in change.sharedEpochs {
            for span in change.spans {
                try indexedSealedWrites(of: conversation, epoch: epoch, author: span.author, clocks: span.clocks) { found[$0] = ($1, $2) }
            }
        }
        return found.keys.sorted().map { ($0, found[$0]!.0, found[$0]!.1) }
    }

    /// The sealed writes of `conversation` sealed in `epoch` (by `author`, with a clock in
    /// `clocks`, when given), decoded. The index keys only 8 bytes of the epoch and of the
    /// author, so what it finds is checked against the decoded record: a write crafted to share
    /// a prefix with another conversation's epoch costs a decode and is left out.
    private func indexedSealedWrites(of conversation: String, epoch: Digest32, author: PublicKey? = nil, clocks: ClosedRange<UInt64>? = nil,
                                     _ each: (Int64, Record, SealedWriteBody) -> Void) throws {
        var condition = "sealed_writes.epoch = ?"
        var values: [SQLValue] = [.integer(Store.indexPrefix(epoch.bytes))]
        if let author {
            condition += " AND sealed_writes.author = ?"
            values.append(.integer(Store.indexPrefix(author.bytes)))
        }
        if let clocks {
            condition += " AND sealed_writes.clock BETWEEN ? AND ?"
            values += [.integer(Store.indexClock(clocks.lowerBound)), .integer(Store.indexClock(clocks.upperBound))]
        }
        try db.query("""
            SELECT records.seq, records.bytes FROM sealed_writes JOIN records ON records.seq = sealed_writes.seq
            WHERE \(condition)
            """, values) { row in
            guard let record = try? Record.decode(row.blob(1), verify: false), case let .sealedWrite(body) = record.body,
                  body.conversation == conversation, body.epoch == epoch, author == nil || record.author == author,
                  clocks.map({ $0.contains(record.clock) }) ?? true else { return }
            each(row.int64(0), record, body)
        }
    }

    /// The index of sealed writes: every node keeps it (a node may be given a key later), in
    /// the order a membership change asks (`sealedWrites(of:changing:)`): by epoch, then by
    /// author and clock. An epoch and an author are kept as their first 8 bytes (what is found
    /// is checked against the record), and no conversation (an epoch's key record names it):
    /// a row takes some 35 bytes of its page instead of some 105, written for every sealed write a node stores.
    static let sealedWritesSchema = """
        CREATE TABLE IF NOT EXISTS sealed_writes (
            epoch INTEGER NOT NULL,
            author INTEGER NOT NULL,
            clock INTEGER NOT NULL,
            seq INTEGER NOT NULL,
            PRIMARY KEY (epoch, author, clock, seq)
        ) STRICT, WITHOUT ROWID;
        """

    /// Adds a stored sealed write to the index (adding it twice changes nothing).
    static func indexSealedWrite(_ record: Record, _ body: SealedWriteBody, seq: Int64, in db: Connection) throws {
        let statement = try db.cachedStatement("INSERT OR IGNORE INTO sealed_writes(epoch, author, clock, seq) VALUES (?, ?, ?, ?)")
        defer { statement.reset(); statement.clearBindings() }
        try statement.bind(.integer(indexPrefix(body.epoch.bytes)), at: 1)
        try statement.bind(.integer(indexPrefix(record.author.bytes)), at: 2)
        try statement.bind(.integer(indexClock(record.clock)), at: 3)
        try statement.bind(.integer(seq), at: 4)
        while try statement.step() {}
    }

    /// The first 8 bytes of a hash or key, as the index keeps them.
    static func indexPrefix(_ bytes: [UInt8]) -> Int64 {
        var value: UInt64 = 0
        for byte in bytes.prefix(8) { value = value << 8 | UInt64(byte) }
        return Int64(bitPattern: value)
    }

    /// A clock as the index keeps it: SQLite integers are signed, and clocks past 2^63 (which
    /// no node accepts: they are bounded by its own clock and the drift) sort last.
    static func indexClock(_ clock: UInt64) -> Int64 { clock > UInt64(Int64.max) ? .max : Int64(clock) }

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
        try transaction {
            for conversation in changed.sorted() { try materializePrivate(conversation) }
            try runKeyTrials()  // key records the other process left untried, queued by `controlRecords()`
        }
    }
}
