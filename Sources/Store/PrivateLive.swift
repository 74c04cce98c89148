import Crypto
import Private
import Wire

/// The live values of private conversations (Protocol.md §11.8) as membership decides them:
/// which key this node's user seals its own under, and which sealed values it may open.
extension Store {
    /// What became of a sealed live value offered to `openLive`.
    public enum LiveOpening: Sendable {
        /// Opened: a member's value, shown to this node's user, a member.
        case opened(LiveValue)
        /// Its epoch's key record is not here yet: it may open once that arrives.
        case epochUnknown
        /// Not for this node (not a member, or no longer), or refused (its author is not a member,
        /// it does not open, its plaintext is bad): the reason.
        case closed(String)
    }

    /// The epoch and key this node's user seals its live values of `conversation` under: the
    /// current epoch, if the user is one of its members (and did not leave).
    public func liveSealingKey(_ conversation: String) -> (epoch: Digest32, key: EpochKey)? {
        guard let user = privateIdentity?.publicKey, let membership = try? membership(of: conversation),
              let (epoch, open) = membership.writableEpoch(for: user) else { return nil }
        return (epoch.id, open.key)
    }

    /// Whether this node's user may read `conversation`'s live values now: a member of its
    /// current epoch, not left. A removed member stops showing them.
    public func mayReadLive(of conversation: String) -> Bool {
        guard let user = privateIdentity?.publicKey, let membership = try? membership(of: conversation) else { return false }
        return membership.currentMembers?.contains(user) == true
    }

    /// Whether `author` may send live values in `conversation` (a current member), as this node sees it.
    public func mayWriteLive(_ author: PublicKey, in conversation: String) -> Bool {
        (try? membership(of: conversation))?.currentMembers?.contains(author) == true
    }

    /// Opens a sealed live value if this node may read it: its user is a current member, the
    /// node holds the epoch that sealed it, whose members include the author, who is a current
    /// member too, and it opens (§11.8).
    public func openLive(_ sealed: SealedLive) -> LiveOpening {
        guard let membership = try? membership(of: sealed.conversation) else { return .closed("no membership") }
        guard let key = membership.key(of: sealed.epoch) else {
            if membership.epochs.contains(where: { $0.id == sealed.epoch }) || ((try? hasKeyRecord(sealed.epoch)) ?? false) {
                return .closed("sealed in an epoch this node does not hold")
            }
            return .epochUnknown
        }
        guard let user = privateIdentity?.publicKey, membership.currentMembers?.contains(user) == true else {
            return .closed("this node's user is not a member")
        }
        guard membership.opened[sealed.epoch]?.meta.members.contains(sealed.author) == true,
              membership.currentMembers?.contains(sealed.author) == true else { return .closed("its author is not a member") }
        do { return .opened(try LiveSealing.open(sealed, key: key)) } catch { return .closed("\(error)") }
    }
}
