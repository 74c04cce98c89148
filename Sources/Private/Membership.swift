import Crypto
import Wire

/// A key record as membership reads it: the signed fields, and what this node could open.
public struct EpochRecord: Sendable {
    public let id: Digest32
    public let author: PublicKey
    public let clock: UInt64
    public let order: WriteOrder
    public let body: GroupKeyBody

    public init(id: Digest32, author: PublicKey, clock: UInt64, order: WriteOrder, body: GroupKeyBody) {
        self.id = id
        self.author = author
        self.clock = clock
        self.order = order
        self.body = body
    }

    public init?(_ record: Record) {
        guard case let .groupKey(body) = record.body else { return nil }
        self.init(id: record.id, author: record.author, clock: record.clock, order: record.order, body: body)
    }
}

/// An author's epoch number, of which one key record counts.
struct EpochSlot: Hashable {
    let author: PublicKey
    let epoch: UInt64
}

/// An epoch this node holds the key of, with its meta.
public struct OpenedEpoch: Sendable {
    public let key: EpochKey
    public let meta: GroupMeta
    /// The meta's members as a set, for the check every sealed write of the epoch makes.
    let memberSet: Set<PublicKey>

    init(key: EpochKey, meta: GroupMeta) {
        self.key = key
        self.meta = meta
        memberSet = Set(meta.members)
    }
}

/// A member's leave: from `clock` on its author is no longer a member.
public struct LeaveEvent: Sendable, Hashable {
    public let author: PublicKey
    public let clock: UInt64
    public let order: WriteOrder

    public init(author: PublicKey, clock: UInt64, order: WriteOrder) {
        self.author = author
        self.clock = clock
        self.order = order
    }

    public init?(_ record: Record) {
        guard case .leave = record.body else { return nil }
        self.init(author: record.author, clock: record.clock, order: record.order)
    }
}

/// Who belongs to a private conversation, decided from its key and leave records and the keys
/// this node holds, and nothing else: not arrival order, not local state (Protocol.md §11.5).
/// Every member's node holding the same records decides alike.
public struct Membership: Sendable {
    public let conversation: String
    /// The key records that count (their author may key the conversation), in epoch order:
    /// (epoch number, write order).
    public let epochs: [EpochRecord]
    /// The epochs this node could open, by record id.
    public let opened: [Digest32: OpenedEpoch]
    /// Leaves that count (by a member other than a group's creator), by clock.
    let leaves: [PublicKey: UInt64]
    /// Member sets over time: (clock, order, members), nil members where this node holds no
    /// key (it was not a member of that epoch).
    let timeline: [(order: WriteOrder, members: Set<PublicKey>?)]

    /// Resolves membership. `device` opens the sealed keys; `records` may hold anything (records
    /// of other conversations, forged key records, in any order): what does not count is left out.
    public init(conversation: String, records: [Record], device: X25519PrivateKey) {
        self.init(conversation: conversation,
                  epochs: records.compactMap(EpochRecord.init),
                  leaves: records.compactMap { r in
                      guard case let .leave(body) = r.body, body.conversation == conversation else { return nil }
                      return LeaveEvent(r)
                  },
                  device: device)
    }

    public init(conversation: String, epochs candidates: [EpochRecord], leaves leaveEvents: [LeaveEvent], device: X25519PrivateKey) {
        self.init(conversation: conversation, epochs: candidates, leaves: leaveEvents) { KeySchedule.openKey($0.body, with: device) }
    }

    /// `openBox` gives the epoch key from the record's sealed keys, if one is this node's: a
    /// caller that resolves membership again and again (on every key or leave record) keeps
    /// its answers by record id, so each key record's boxes are tried once.
    public init(conversation: String, epochs candidates: [EpochRecord], leaves leaveEvents: [LeaveEvent],
                openBox: (EpochRecord) -> EpochKey?) {
        self.conversation = conversation
        let valid = candidates
            .filter { $0.body.conversation == conversation && ConversationID.mayKey($0.body, author: $0.author) }
            .sorted { ($0.body.epoch, $0.order) < ($1.body.epoch, $1.order) }
        // One key record counts per author and epoch number: the first in write order. A
        // creator (or a direct conversation's member) making many key records of one number
        // gains nothing, and with epoch numbers bounded (`PrivateLimits.maxEpoch`) so is the
        // number of epochs a node resolves.
        var seen = Set<Digest32>()
        var numbered = Set<EpochSlot>()
        let epochs = valid.filter { seen.insert($0.id).inserted && numbered.insert(EpochSlot(author: $0.author, epoch: $0.body.epoch)).inserted }
        let opened = Membership.open(epochs, openBox: openBox)
        self.epochs = epochs
        self.opened = opened

        // A leave counts for a member other than the group's creator, from its earliest clock.
        var leaves = [PublicKey: UInt64]()
        let isDirect = ConversationID.isDirect(conversation)
        for event in leaveEvents where !isDirect && !epochs.contains(where: { $0.author == event.author }) {
            leaves[event.author] = min(leaves[event.author] ?? .max, event.clock)
        }
        self.leaves = leaves
        timeline = epochs
            .map { (order: $0.order, members: opened[$0.id]?.memberSet) }
            .sorted { $0.order < $1.order }
    }

    /// Opens what `device` can: every epoch whose sealed keys include one for it, then, link by
    /// link, every earlier epoch an opened one hands on (groups that share history). An epoch
    /// whose meta does not open, does not decode, or breaks the rules of its kind (a group's
    /// creator among its members; a direct conversation's two members exactly) is not opened.
    static func open(_ epochs: [EpochRecord], openBox: (EpochRecord) -> EpochKey?) -> [Digest32: OpenedEpoch] {
        let byID = Dictionary(epochs.map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a })
        var opened = [Digest32: OpenedEpoch]()
        var pending = [(EpochRecord, EpochKey)]()
        for epoch in epochs {
            if let key = openBox(epoch) { pending.append((epoch, key)) }
        }
        while let (epoch, key) = pending.popLast() {
            guard opened[epoch.id] == nil, let meta = try? KeySchedule.openMeta(epoch.body, key: key, author: epoch.author),
                  obeysRules(meta, of: epoch) else { continue }
            opened[epoch.id] = OpenedEpoch(key: key, meta: meta)
            if let previous = meta.previous, let earlier = byID[previous.epoch], opened[earlier.id] == nil,
               earlier.order < epoch.order, let earlierKey = try? EpochKey(bytes: previous.key) {
                pending.append((earlier, earlierKey))
            }
        }
        return opened
    }

    static func obeysRules(_ meta: GroupMeta, of epoch: EpochRecord) -> Bool {
        if let pair = ConversationID.directMembers(epoch.body, author: epoch.author) {
            return Set(meta.members) == pair && meta.members.count == 2
        }
        return meta.members.contains(epoch.author)
    }

    /// The epoch new writes go to: the last in epoch order, if this node holds its key.
    public var current: EpochRecord? { epochs.last }

    /// The current epoch with its key, when this node may write in it.
    public func writableEpoch(for user: PublicKey) -> (EpochRecord, OpenedEpoch)? {
        guard let epoch = current, let open = opened[epoch.id], open.meta.members.contains(user), leaves[user] == nil else { return nil }
        return (epoch, open)
    }

    /// The group's creator (for a direct conversation, nil: both members key it).
    public var creator: PublicKey? {
        ConversationID.isDirect(conversation) ? nil : epochs.first?.author
    }

    /// The members at write order `order`, or nil when this node holds no key for the epoch
    /// then in force (it was not a member) or no epoch was in force yet.
    public func members(at order: WriteOrder) -> Set<PublicKey>? {
        var members: Set<PublicKey>?
        for event in timeline {
            guard event.order < order else { break }
            members = event.members
        }
        guard var result = members else { return nil }
        for (author, clock) in leaves where clock <= order.clock { result.remove(author) }
        return result
    }

    /// The members now: of the last epoch (if opened), less those who left.
    public var currentMembers: Set<PublicKey>? {
        guard let epoch = current, let open = opened[epoch.id] else { return nil }
        return Set(open.meta.members).subtracting(leaves.keys)
    }

    /// Whether a sealed write by `author` at `order`, sealed in `epoch`, takes effect: the node
    /// holds the epoch's key, the author is a member of that epoch, and still a member at the
    /// write's place in order (not removed by a later epoch, not left). A removed member's
    /// later writes, in whatever epoch, have no effect.
    public func admits(author: PublicKey, order: WriteOrder, epoch: Digest32) -> Bool {
        guard let open = opened[epoch], open.memberSet.contains(author) else { return false }
        // As `members(at:)` would answer for this one author, without copying the set: the
        // check runs for every sealed write a member's node folds.
        var inForce: Set<PublicKey>?
        for event in timeline {
            guard event.order < order else { break }
            inForce = event.members
        }
        guard inForce?.contains(author) == true else { return false }
        if let left = leaves[author], left <= order.clock { return false }
        return true
    }

    /// The key to open writes sealed in `epoch`, if held.
    public func key(of epoch: Digest32) -> EpochKey? { opened[epoch]?.key }

    /// The title of the last opened epoch.
    public var title: String? {
        epochs.reversed().lazy.compactMap { self.opened[$0.id]?.meta.title }.first
    }
}

/// Where two resolutions of one conversation's membership (before and after a key or leave
/// record) may judge a sealed write differently, so that only those writes are judged again.
public struct MembershipChange: Sendable {
    /// Epochs one of them opens and the other does not: every write sealed in them.
    public var epochs: Set<Digest32> = []
    /// Epochs both open: within them, only the writes of `spans` can be judged differently.
    public var sharedEpochs: [Digest32] = []
    /// An author and the clocks (inclusive) over which its membership may differ.
    public var spans: [(author: PublicKey, clocks: ClosedRange<UInt64>)] = []
}

extension Membership {
    /// What may judge differently from `before` (a superset; never less). A write of author
    /// `a` at order `o` sealed in epoch `e` is admitted when `e` is opened with `a` among its
    /// members and `a` is among the members at `o`: the members of the last epoch (in write
    /// order) before `o`, less leaves. So a difference needs `e` opened on one side only, or a
    /// stretch of write order where the members in force differ (between two consecutive
    /// epochs of either side, for the authors in one set and not the other), or a leave that
    /// differs (from its clock on, for its author).
    public func changes(since before: Membership) -> MembershipChange {
        var change = MembershipChange()
        let ids = Set(opened.keys).union(before.opened.keys)
        for id in ids {
            if (opened[id] == nil) != (before.opened[id] == nil) { change.epochs.insert(id) } else { change.sharedEpochs.append(id) }
        }
        change.sharedEpochs.sort { $0.bytes.lexicographicallyPrecedes($1.bytes) }
        // Breakpoints: every epoch's place in write order on either side, walked in order with
        // the member set in force on each side just after it.
        let marks = Array(Set(timeline.map(\.order) + before.timeline.map(\.order))).sorted()
        var mine = 0, theirs = 0
        var nowMembers: Set<PublicKey>?, thenMembers: Set<PublicKey>?
        for (index, mark) in marks.enumerated() {
            while mine < timeline.count, !(mark < timeline[mine].order) { nowMembers = timeline[mine].members; mine += 1 }
            while theirs < before.timeline.count, !(mark < before.timeline[theirs].order) {
                thenMembers = before.timeline[theirs].members
                theirs += 1
            }
            guard nowMembers != thenMembers else { continue }
            let upTo = index + 1 < marks.count ? marks[index + 1].clock : .max
            for author in (nowMembers ?? []).symmetricDifference(thenMembers ?? []) {
                change.spans.append((author, mark.clock...upTo))
            }
        }
        for author in Set(leaves.keys).union(before.leaves.keys) where leaves[author] != before.leaves[author] {
            change.spans.append((author, min(leaves[author] ?? .max, before.leaves[author] ?? .max)...UInt64.max))
        }
        return change
    }
}
