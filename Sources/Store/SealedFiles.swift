import Crypto
import Private
import SQLite
import Tree
import Wire

/// Photos of private conversations (Protocol.md §11.7): stored sealed under a per-file key, so
/// the chunks every node holds and relays are ciphertext; a member's node opens them with the
/// key that the sealed message naming the file carries (`photoKey`).
extension Store {
    /// Seals `bytes` (an image, checked as `putFile` checks it) under a fresh key and stores the
    /// sealed bytes at `path`. Returns the file and the key, which belongs in the sealed message
    /// that names the file and nowhere else. Durable on return.
    public func putSealedFile(_ path: String, bytes: [UInt8], declaredType: String? = nil, signer: PrivateKey,
                              nowMillis: UInt64, limit: Int = Store.defaultFileLimit) throws -> (file: FileInfo, key: [UInt8]) {
        let path = FileEntry.canonicalPath(path)
        try FileEntry.validate(path: path)
        try Store.checkMayWrite(path, signer: signer)
        _ = try Store.checkFile(bytes, declaredType: declaredType, limit: limit)
        let key = SealedFile.makeKey()
        let file = try putBlob(path, bytes: SealedFile.seal(bytes, key: key), type: SealedFile.contentType, signer: signer, nowMillis: nowMillis)
        return (file, key)
    }

    /// What a reader of the file at `path` gets: its bytes and media type. A sealed file is
    /// opened with a key carried by a message this node reads (the type is then sniffed from the
    /// plaintext); `noKey` if there is none, `undecryptable` if none opens it.
    public func openFile(_ path: String) throws -> (bytes: [UInt8], type: String) {
        let path = FileEntry.canonicalPath(path)
        guard let info = try fileInfo(path) else { throw FileError.notFound(path) }
        let stored = try readFile(path)
        guard info.manifest.contentType == SealedFile.contentType else { return (stored, info.manifest.contentType) }
        let keys = try sealedFileKeys(path)
        guard !keys.isEmpty else { throw FileError.noKey(path) }
        for key in keys {
            if let plain = try? SealedFile.open(stored, key: key) {
                return (plain, ImageType.sniff(plain) ?? "application/octet-stream")
            }
        }
        throw FileError.undecryptable(path)
    }

    /// The keys that messages by the path's owner carry for the sealed file at `path` (NFC).
    func sealedFileKeys(_ path: String) throws -> [[UInt8]] {
        try db.all("SELECT key FROM sealed_file_keys WHERE path = ? LIMIT 16", [.text(path)]) { $0.blob(0) }
    }
}

extension Store {
    /// The private conversation, among those this node reads, that holds a message `key` sent
    /// by `sender`: a chat app pushes a photo message first and then uploads its image under
    /// the message key (`images/<sender>_<key>.<ext>`), so the upload finds its conversation.
    public func privateConversation(ofMessage key: String, sender: String) throws -> String? {
        for conversation in try controlRecords().keys.sorted() {
            guard let path = try? Path(segments: ["conversations", conversation, "messages", key, "senderId"]) else { continue }
            if case .string(sender)? = try? value(at: path) { return conversation }
        }
        return nil
    }
}
