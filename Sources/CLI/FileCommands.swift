import Crypto
import Foundation
import Private
import Node
import Store
import Tree
import Wire

/// Images: photo messages, profile pictures, and files fetched from peers.
enum FileCommands {
    static let all = [sendImage, getFile, setPicture, getPicture, files]
    /// The bucket name in `gs://` URLs of stored files.
    static let bucket = "lanchat"

    static func readInput(_ file: String) throws -> [UInt8] {
        guard let data = FileManager.default.contents(atPath: file) else {
            throw CommandFailure("cannot read \(file)")
        }
        return Array(data)
    }

    static let sendImage = Command(spec: CommandSpec(
        name: "send-image",
        writes: true,
        abstract: "Send a photo message: the message appears at once, the photo when it is stored.",
        discussion: "As Firebase chat apps do it: a message with photoURL \"NOTSET\" is pushed first, the image is stored at images/<your id>_<key>.<ext> (a path only you can write), then photoURL is set to gs://lanchat/images/<your id>_<key>.<ext>. In a private conversation the image is sealed under a fresh key first and stored at a random name, and one sealed message carries its photoURL and key (photoKey).",
        arguments: [ChatCommands.conversationArgument, ArgumentSpec(name: "FILE", help: "A JPEG, PNG, GIF or WebP image.")],
        options: [OptionSpec(name: "type", valueName: "TYPE", help: "The declared content type; it must match the bytes.")]
    )) { context in
        let messages = try ChatCommands.messagesPath(context)
        let bytes = try readInput(context.positional(1))
        // Refused files are refused before the message is pushed, so no photo message is left
        // waiting for a photo that never comes.
        let type: String
        do { type = try Store.checkFile(bytes, declaredType: context.arguments.value("type")) } catch { throw CommandFailure("\(error)") }
        let node = try context.openNode()
        let now = context.console.nowMillis
        if ConversationID.isPrivate(context.positional(0)) {
            try sendSealedImage(bytes, type: type, to: messages, node: node, context)
            return
        }
        let (key, _) = try node.store.push(messages, value: .object([
            "senderId": .string(node.userID), "senderName": .string(try node.displayName()),
            "date": .object([".sv": "timestamp"]), "photoURL": "NOTSET",
        ]), signer: node.identity, nowMillis: now())
        _ = ControlClient.ask(context.dataDirectory, "sync", timeoutSeconds: 2)  // peers see the message now
        // Under the author's id, so that no other member can put another file at the photo's path.
        let path = "images/\(node.userID)_\(key).\(ImageType.fileExtension(type))"
        try node.store.putFile(path, bytes: bytes, declaredType: context.arguments.value("type"), signer: node.identity, nowMillis: now())
        try node.store.set(try messages.appending(key).appending("photoURL"), to: .string("gs://\(bucket)/\(path)"),
                           signer: node.identity, nowMillis: now())
        context.console.print(key)
        context.console.printError("stored \(bytes.count) bytes (\(type)) at gs://\(bucket)/\(path)")
    }

    /// A photo for a private conversation (Protocol.md §11.7): sealed under a fresh key and
    /// stored first, at a random name under the sender's id (the message key would tell others
    /// which message it belongs to), then one sealed message carries both its URL and its key.
    static func sendSealedImage(_ bytes: [UInt8], type: String, to messages: Path, node: LocalNode, _ context: CommandContext) throws {
        let now = context.console.nowMillis
        let path = "images/\(node.userID)_\(Base64URL.encode(secureRandomBytes(16)))"
        let stored = try node.store.putSealedFile(path, bytes: bytes, declaredType: context.arguments.value("type"),
                                                  signer: node.identity, nowMillis: now())
        let (key, _) = try node.store.push(messages, value: .object([
            "senderId": .string(node.userID), "senderName": .string(try node.displayName()),
            "date": .object([".sv": "timestamp"]), "photoURL": .string("gs://\(bucket)/\(path)"),
            "photoKey": .string(SealedFile.encodeKey(stored.key)),
        ]), signer: node.identity, nowMillis: now())
        context.console.print(key)
        context.console.printError("stored \(bytes.count) bytes (\(type)) sealed for the conversation's members at gs://\(bucket)/\(path)")
    }

    static let getFile = Command(spec: CommandSpec(
        name: "get-file",
        abstract: "Write a stored file's bytes to OUT, fetching missing chunks from peers.",
        discussion: "Fetching needs a running node on the data directory (lanchat run); progress goes to stderr.",
        arguments: [ArgumentSpec(name: "STORAGE_PATH", help: "Like images/cat.png or gs://lanchat/images/cat.png."),
                    ArgumentSpec(name: "OUT", help: "Where to write the bytes.")]
    )) { context in
        let path = Store.storagePath(fromURL: context.positional(0)) ?? context.positional(0)
        try fetchAndWrite(path, to: context.positional(1), context)
    }

    /// Writes the file at `path` to `out`, first fetching its chunks through the running node.
    static func fetchAndWrite(_ path: String, to out: String, _ context: CommandContext) throws {
        let node = try context.openNode()
        guard var info = try node.store.fileInfo(path) else { throw CommandFailure("\(FileError.notFound(path))") }
        if !info.isComplete {
            guard ControlClient.ask(context.dataDirectory, "fetch \(path)") != nil else {
                throw CommandFailure("\(info.missing.count) of \(info.manifest.chunks.count) chunks of \(path) are not here; start the node (lanchat run) to fetch them from peers")
            }
            let total = info.manifest.chunks.count
            var lastMissing = info.missing.count
            var lastProgress = Date()
            while !info.isComplete {
                context.console.writeErr("\rfetching \(path): \(total - info.missing.count)/\(total) chunks")
                if Date().timeIntervalSince(lastProgress) > 60 {
                    context.console.writeErr("\n")
                    throw CommandFailure("no chunk of \(path) arrived for 60 s; \(info.missing.count) of \(total) still missing (no peer holds them?)")
                }
                usleep(100_000)  // a waiting user, not synchronisation: the store is polled
                guard let next = try node.store.fileInfo(path) else { throw CommandFailure("\(path) was deleted") }
                info = next
                if info.missing.count < lastMissing { lastMissing = info.missing.count; lastProgress = Date() }
            }
            context.console.writeErr("\rfetching \(path): \(total)/\(total) chunks\n")
        }
        // A sealed file is written opened, with the key a message here carries, or not at all.
        let file: (bytes: [UInt8], type: String)
        do { file = try node.store.openFile(path) } catch let error as FileError { throw CommandFailure("\(error)") }
        guard FileManager.default.createFile(atPath: out, contents: Data(file.bytes)) else { throw CommandFailure("cannot write \(out)") }
        context.console.printError("wrote \(file.bytes.count) bytes (\(file.type)) to \(out)")
    }

    static let setPicture = Command(spec: CommandSpec(
        name: "set-picture",
        writes: true,
        abstract: "Set your profile picture (stored at images/<id>_profile_picture.<ext>).",
        arguments: [ArgumentSpec(name: "FILE", help: "A JPEG, PNG, GIF or WebP image.")]
    )) { context in
        let bytes = try readInput(context.positional(0))
        let type: String
        do { type = try Store.checkFile(bytes) } catch { throw CommandFailure("\(error)") }
        let node = try context.openNode()
        let path = "images/\(node.userID)_profile_picture.\(ImageType.fileExtension(type))"
        try node.store.putFile(path, bytes: bytes, signer: node.identity, nowMillis: context.console.nowMillis())
        try node.store.set(node.profilePath.appending("picture"), to: .string(path), signer: node.identity, nowMillis: context.console.nowMillis())
        context.console.print(path)
    }

    static let getPicture = Command(spec: CommandSpec(
        name: "get-picture",
        abstract: "Write a user's profile picture to OUT, fetching it from peers if needed.",
        arguments: [ArgumentSpec(name: "USER_ID", help: "The user's id."), ArgumentSpec(name: "OUT", help: "Where to write the bytes.")]
    )) { context in
        let node = try context.openNode()
        let userPath: Path
        do { userPath = try Path(segments: ["users", context.positional(0), "picture"]) } catch {
            throw UsageError(message: "invalid user id '\(context.positional(0))'")
        }
        guard case let .string(picture) = try node.store.value(at: userPath) else {
            throw CommandFailure("user \(context.positional(0)) has no profile picture")
        }
        try fetchAndWrite(Store.storagePath(fromURL: picture) ?? picture, to: context.positional(1), context)
    }

    static let files = Command(spec: CommandSpec(
        name: "files",
        abstract: "List stored files with their size, type, and whether all chunks are here.",
        arguments: [ArgumentSpec(name: "PREFIX", help: "Only paths starting with this.", optional: true)]
    )) { context in
        let node = try context.openNode()
        for file in try node.store.listFiles(prefix: context.arguments.positionals.first ?? "") {
            let state = file.isComplete ? "complete" : "\(file.manifest.chunks.count - file.missing.count)/\(file.manifest.chunks.count) chunks"
            context.console.print("\(file.path)  \(file.manifest.size) bytes  \(file.manifest.contentType)  \(state)")
        }
    }
}
