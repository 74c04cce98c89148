import Tree

/// `get`, `set`, `update`, `push`, `delete`: the Firebase operations on the shared tree.
enum TreeCommands {
    static let all = [get, set, update, push, delete]

    static let pathArgument = ArgumentSpec(name: "PATH", help: "A tree path such as /users or /conversations/general.")
    static let jsonArgument = ArgumentSpec(name: "JSON", help: "A JSON value; {\".sv\":\"timestamp\"} is the current time.")

    static let get = Command(spec: CommandSpec(
        name: "get",
        abstract: "Print the JSON value at a path (null when absent).",
        arguments: [pathArgument],
        options: [OptionSpec(name: "pretty", valueName: nil, help: "Indent the output.")]
    )) { context in
        let path = try context.path(0)
        let node = try context.openNode()
        let value = try node.store.value(at: path)
        context.console.print(context.arguments.flag("pretty") ? value.serializedPretty() : value.serialized())
    }

    static let set = Command(spec: CommandSpec(
        name: "set",
        writes: true,
        abstract: "Replace the value at a path.",
        arguments: [pathArgument, jsonArgument]
    )) { context in
        let path = try context.path(0)
        let value = try context.json(1)
        let node = try context.openNode()
        try node.store.set(path, to: value, signer: node.identity, nowMillis: context.console.nowMillis())
    }

    static let update = Command(spec: CommandSpec(
        name: "update",
        writes: true,
        abstract: "Replace several children of a path at once.",
        discussion: "JSON is an object whose keys are paths relative to PATH (\"c/d\" is allowed); null deletes. Each listed child is replaced as a whole.",
        arguments: [pathArgument, ArgumentSpec(name: "JSON", help: "An object of relative paths to values.")]
    )) { context in
        let path = try context.path(0)
        let value = try context.json(1)
        let node = try context.openNode()
        do {
            try node.store.update(path, with: value, signer: node.identity, nowMillis: context.console.nowMillis())
        } catch let error as TreeError {
            throw UsageError(message: "\(error)")
        }
    }

    static let push = Command(spec: CommandSpec(
        name: "push",
        writes: true,
        abstract: "Add a child with a new time-ordered key; print the key.",
        arguments: [pathArgument, jsonArgument]
    )) { context in
        let path = try context.path(0)
        let value = try context.json(1)
        let node = try context.openNode()
        let (key, _) = try node.store.push(path, value: value, signer: node.identity, nowMillis: context.console.nowMillis())
        context.console.print(key)
    }

    static let delete = Command(spec: CommandSpec(
        name: "delete",
        writes: true,
        abstract: "Remove the value at a path.",
        arguments: [pathArgument]
    )) { context in
        let path = try context.path(0)
        let node = try context.openNode()
        try node.store.delete(path, signer: node.identity, nowMillis: context.console.nowMillis())
    }
}
