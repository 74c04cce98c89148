import Crypto
import Tree

/// What the honest users did, as the workload saw it acknowledged: the oracle the final state
/// is checked against. It follows from the spec (a user's profile and messages are theirs
/// alone; a write acknowledged is kept), never from the store's own rules.
struct Model {
    /// Record ids each host's writes stored before the write returned, by host.
    var acknowledged: [Int: [Digest32]] = [:]
    /// Each honest user's profile fields as last written by that user.
    var profiles: [String: [String: JSONValue]] = [:]
    /// Messages of the conversation by key: the owner's user id and the value last written by
    /// the owner (nil once deleted).
    var messages: [String: (owner: String, value: JSONValue?)] = [:]
    /// Storage paths of the photos written, each referenced by a message or profile.
    var files: [String] = []

    /// The photos that messages and profiles refer to at the end (a photo replaced as a
    /// profile picture, or whose message was deleted, need not be fetched).
    var referencedFiles: [String] {
        var paths = Set<String>()
        for entry in messages.values {
            if case let .string(path)? = entry.value?.objectValue?["photoURL"] { paths.insert(path) }
        }
        for profile in profiles.values {
            if case let .string(path)? = profile["picture"] { paths.insert(path) }
        }
        return paths.sorted()
    }

    var acknowledgedCount: Int { acknowledged.values.reduce(0) { $0 + $1.count } }
}

/// Paths of the chat's layout used by the workload.
enum Layout {
    static let conversation = "general"

    static func profile(_ uid: String) -> [String] { ["users", uid] }
    static func messages() -> [String] { ["conversations", conversation, "messages"] }
    static func message(_ key: String) -> [String] { messages() + [key] }
    static func title() -> [String] { ["conversations", conversation, "meta", "title"] }
}
