import Crypto
import Private
import Tree
import Wire

/// Making and changing private conversations: each change is one signed key or leave record,
/// stored (and so folded and relayed) like a local write.
extension Store {
    /// A conversation's membership as this node sees it, for the API and the CLI.
    public struct PrivateInfo: Sendable, Equatable {
        public let conversation: String
        public let title: String
        /// Current members, less those who left; empty when this node may not read it any more.
        public let members: [PublicKey]
        /// A group's creator; nil for a direct conversation.
        public let creator: PublicKey?
        public let sharesHistory: Bool
    }

    /// Creates a group with `members` (the creator is always one) and returns its id.
    public func createGroup(title: String, members: [PublicKey], sharesHistory: Bool, signer: PrivateKey, nowMillis: UInt64) throws -> String {
        guard title.utf8.count <= GroupMeta.maxTitleBytes else {
            throw StoreError.permissionDenied(path: "a group title of \(title.utf8.count) bytes (at most \(GroupMeta.maxTitleBytes))")
        }
        let salt = secureRandomBytes(PrivateLimits.saltBytes)
        let conversation = ConversationID.group(creator: signer.publicKey, salt: salt)
        let meta = GroupMeta(title: title, members: members + [signer.publicKey], sharesHistory: sharesHistory)
        try writeEpoch(conversation: conversation, epoch: 1, salt: salt, meta: meta, signer: signer, nowMillis: nowMillis)
        return conversation
    }

    /// The direct conversation with `other`, keyed now unless it is keyed already; returns its id.
    public func openDirect(with other: PublicKey, signer: PrivateKey, nowMillis: UInt64) throws -> String {
        guard other != signer.publicKey else { throw StoreError.permissionDenied(path: "a direct conversation with oneself") }
        let conversation = ConversationID.direct(signer.publicKey, other)
        if try membership(of: conversation).writableEpoch(for: signer.publicKey) != nil { return conversation }
        let epoch = (try membership(of: conversation).current?.body.epoch ?? 0) + 1
        guard epoch <= PrivateLimits.maxEpoch else {
            throw StoreError.permissionDenied(path: "\(conversation) has had \(PrivateLimits.maxEpoch) epochs, the most a conversation has")
        }
        let meta = GroupMeta(title: "", members: [signer.publicKey, other])
        try writeEpoch(conversation: conversation, epoch: epoch, salt: other.bytes, meta: meta, signer: signer, nowMillis: nowMillis)
        return conversation
    }

    /// A new epoch of a group with `adding` in and `removing` out; only its creator may.
    public func changeMembers(_ conversation: String, adding: [PublicKey], removing: [PublicKey], signer: PrivateKey, nowMillis: UInt64) throws {
        let membership = try membership(of: conversation)
        guard !ConversationID.isDirect(conversation), membership.creator == signer.publicKey,
              let (current, open) = membership.writableEpoch(for: signer.publicKey), let members = membership.currentMembers else {
            throw StoreError.permissionDenied(path: "/conversations/\(conversation)/meta/members")
        }
        guard !removing.contains(signer.publicKey) else { throw StoreError.permissionDenied(path: "the creator cannot be removed") }
        guard current.body.epoch < PrivateLimits.maxEpoch else {
            throw StoreError.permissionDenied(path: "\(conversation) has had \(PrivateLimits.maxEpoch) epochs, the most a conversation has; start a new group")
        }
        let next = members.union(adding).subtracting(removing)
        let meta = GroupMeta(title: open.meta.title, members: next, sharesHistory: open.meta.sharesHistory,
                             previous: open.meta.sharesHistory ? (current.id, open.key.copyBytes()) : nil)
        try writeEpoch(conversation: conversation, epoch: current.body.epoch + 1, salt: current.body.salt, meta: meta,
                       signer: signer, nowMillis: nowMillis)
    }

    /// Leaves a group (its creator cannot).
    public func leaveGroup(_ conversation: String, signer: PrivateKey, nowMillis: UInt64) throws {
        let membership = try membership(of: conversation)
        guard !ConversationID.isDirect(conversation), membership.creator != signer.publicKey,
              membership.currentMembers?.contains(signer.publicKey) == true else {
            throw StoreError.permissionDenied(path: "/conversations/\(conversation)/meta/members")
        }
        _ = try transaction { try writeRecord(.leave(LeaveBody(conversation: conversation)), signer: signer, nowMillis: nowMillis) }
    }

    /// What this node knows of a private conversation; nil if it holds none of its keys.
    public func privateInfo(_ conversation: String) throws -> PrivateInfo? {
        guard ConversationID.isPrivate(conversation) else { return nil }
        let membership = try membership(of: conversation)
        guard let shown = membership.epochs.last(where: { membership.opened[$0.id] != nil }),
              let meta = membership.opened[shown.id]?.meta else { return nil }
        return PrivateInfo(conversation: conversation, title: meta.title, members: (membership.currentMembers ?? []).sorted(),
                           creator: membership.creator, sharesHistory: meta.sharesHistory)
    }

    /// Signs and stores a key record sealing a fresh epoch key to every member's device.
    func writeEpoch(conversation: String, epoch: UInt64, salt: [UInt8], meta: GroupMeta, signer: PrivateKey, nowMillis: UInt64) throws {
        var devices = [X25519PublicKey]()
        for member in meta.members {
            do { devices.append(try member.x25519()) } catch {
                throw StoreError.permissionDenied(path: "member \(member.userID) has no device key")
            }
        }
        let body = KeySchedule.makeKeyBody(conversation: conversation, epoch: epoch, salt: salt, key: EpochKey(), meta: meta,
                                           author: signer.publicKey, recipients: devices)
        _ = try transaction { try writeRecord(.groupKey(body), signer: signer, nowMillis: nowMillis) }
    }
}

extension Store {
    /// Whether the current epoch of a group `creator` made still seals its key to someone who
    /// has left since: then the creator's node makes a new epoch without them.
    public func epochOutlivesLeaves(_ conversation: String, creator: PublicKey) throws -> Bool {
        let membership = try membership(of: conversation)
        guard membership.creator == creator, let (_, open) = membership.writableEpoch(for: creator),
              let members = membership.currentMembers else { return false }
        return !Set(open.meta.members).isSubset(of: members)
    }
}
