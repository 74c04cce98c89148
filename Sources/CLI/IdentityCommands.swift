import Tree

/// `init` and `whoami`: a node's identity.
enum IdentityCommands {
    static let all = [initialize, whoami]

    static let initialize = Command(spec: CommandSpec(
        name: "init",
        abstract: "Create a new identity and profile in the data directory.",
        discussion: "Prints the new user id (the public key in base64url). The name is split at its first space into first_name and last_name.",
        options: [
            OptionSpec(name: "name", valueName: "NAME", help: "Your name, e.g. \"Alice Smith\" (required)."),
            OptionSpec(name: "email", valueName: "EMAIL", help: "Your email address, shown in the users directory."),
            OptionSpec(name: "platform", valueName: "PLATFORM", help: "The platform recorded in your profile (default: cli)."),
        ]
    )) { context in
        guard let name = context.arguments.value("name"), !name.trimmingCharacters(in: .whitespaces).isEmpty else {
            throw UsageError(message: "missing expected option '--name NAME'")
        }
        let (first, last) = ProfileName.split(name)
        var profile: [String: JSONValue] = [
            "first_name": .string(first),
            "last_name": .string(last),
            "platform": .string(context.arguments.value("platform") ?? "cli"),
        ]
        if let email = context.arguments.value("email") { profile["email"] = .string(email) }
        let node = try LocalNode.create(context.dataDirectory)
        try node.store.set(node.profilePath, to: .object(profile), signer: node.identity, nowMillis: context.console.nowMillis())
        context.console.print(node.userID)
    }

    static let whoami = Command(spec: CommandSpec(
        name: "whoami",
        abstract: "Print this node's user id."
    )) { context in
        let node = try context.openNode()
        context.console.print(node.userID)
    }
}
