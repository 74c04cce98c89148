import Foundation
import Crypto
import Store
import Tree
import Wire

/// A node's identity and store opened straight from its data directory, for commands run while
/// no node process is serving that directory.
struct LocalNode {
    let directory: DataDirectory
    let identity: PrivateKey
    let store: Store

    var userID: String { identity.publicKey.userID }

    static func open(_ directory: DataDirectory) throws -> LocalNode {
        try directory.requireInitialized()
        let identity = try KeyFile.load(from: directory.keyPath)
        let store = try Store(path: directory.databasePath)
        try store.usePrivateKeys(of: identity)
        return LocalNode(directory: directory, identity: identity, store: store)
    }

    /// Creates the directory, the identity and the store; refuses to replace an identity.
    static func create(_ directory: DataDirectory) throws -> LocalNode {
        try directory.createIfNeeded()
        guard !directory.isInitialized else { throw StoreError.alreadyInitialized(directory: directory.path) }
        let identity = PrivateKey()
        let store = try Store(path: directory.databasePath)
        try KeyFile.create(identity, at: directory.keyPath)
        try store.usePrivateKeys(of: identity)
        return LocalNode(directory: directory, identity: identity, store: store)
    }

    /// This user's profile path, `/users/<id>`.
    var profilePath: Path { try! Path(segments: ["users", userID]) }  // a user id is a valid key

    /// "First Last" from the profile, or the user id when there is none.
    func displayName() throws -> String {
        try store.displayName(ofUser: userID) ?? userID
    }
}

/// Names as the chat apps store them: `first_name` and `last_name`.
enum ProfileName {
    /// Splits "First Last Names" at the first space: first_name "First", last_name the rest.
    static func split(_ full: String) -> (first: String, last: String) {
        let trimmed = full.trimmingCharacters(in: .whitespaces)
        guard let space = trimmed.firstIndex(of: " ") else { return (trimmed, "") }
        return (String(trimmed[..<space]), String(trimmed[trimmed.index(after: space)...]).trimmingCharacters(in: .whitespaces))
    }
}
