/// A small argument parser in the manner of swift-argument-parser: each command declares its
/// positional arguments and options; help and usage lines are generated from the declaration.

/// One `--name [VALUE]` option.
struct OptionSpec: Sendable {
    let name: String
    /// `nil` for a flag that takes no value.
    let valueName: String?
    let help: String
    /// Whether the option may be given several times.
    var repeatable = false
}

/// One positional argument.
struct ArgumentSpec: Sendable {
    let name: String
    let help: String
    var optional = false
}

/// The declaration of a subcommand.
struct CommandSpec: Sendable {
    let name: String
    /// Whether the command writes records (a running node is then told to push them).
    var writes = false
    let abstract: String
    var discussion: String = ""
    var arguments: [ArgumentSpec] = []
    var options: [OptionSpec] = []

    /// Every command takes these.
    static let commonOptions = [
        OptionSpec(name: "data", valueName: "DIR", help: "The node's data directory (default: $LANCHAT_DATA, else ~/.lanchat)."),
    ]

    var allOptions: [OptionSpec] { options + CommandSpec.commonOptions }

    var usage: String {
        var parts = ["lanchat", name]
        for option in allOptions {
            let text = option.valueName.map { "--\(option.name) \($0)" } ?? "--\(option.name)"
            parts.append(option.repeatable ? "[\(text)]..." : "[\(text)]")
        }
        for argument in arguments { parts.append(argument.optional ? "[\(argument.name)]" : argument.name) }
        return parts.joined(separator: " ")
    }

    var help: String {
        var lines = ["OVERVIEW: \(abstract)"]
        if !discussion.isEmpty { lines += ["", discussion] }
        lines += ["", "USAGE: \(usage)"]
        if !arguments.isEmpty {
            lines += ["", "ARGUMENTS:"]
            for a in arguments { lines.append("  " + pad(a.name) + a.help) }
        }
        lines += ["", "OPTIONS:"]
        for o in allOptions {
            lines.append("  " + pad(o.valueName.map { "--\(o.name) \($0)" } ?? "--\(o.name)") + o.help)
        }
        lines.append("  " + pad("-h, --help") + "Show help information.")
        return lines.joined(separator: "\n") + "\n"
    }

    private func pad(_ s: String) -> String {
        s.count >= 24 ? s + "  " : s + String(repeating: " ", count: 24 - s.count)
    }
}

/// A usage mistake: reported as `Error: ...` plus the usage line, exit status 64.
struct UsageError: Error {
    let message: String
}

/// The parsed command line of one subcommand.
struct ParsedArguments {
    var positionals: [String] = []
    var options: [String: [String]] = [:]
    var flags: Set<String> = []
    var wantsHelp = false

    func value(_ name: String) -> String? { options[name]?.last }
    func values(_ name: String) -> [String] { options[name] ?? [] }
    func flag(_ name: String) -> Bool { flags.contains(name) }
}

extension CommandSpec {
    /// Parses `arguments` (everything after the subcommand name). Options may appear anywhere,
    /// as `--name value` or `--name=value`; `--` ends options. No command has one-letter
    /// options besides `-h`, so any other token with a single leading `-` is a value: user ids
    /// are base64url and one in 64 begins with `-`, and `-5` is a number. A value that begins
    /// with `--` goes after `--`.
    func parse(_ tokens: [String]) throws(UsageError) -> ParsedArguments {
        var parsed = ParsedArguments()
        var index = 0
        var optionsEnded = false
        while index < tokens.count {
            let token = tokens[index]
            index += 1
            if token == "--", !optionsEnded { optionsEnded = true; continue }
            if !optionsEnded, token == "-h" || token == "--help" { parsed.wantsHelp = true; continue }
            if optionsEnded || !token.hasPrefix("--") {
                parsed.positionals.append(token)
                continue
            }
            var name = String(token.dropFirst(2))
            var inlineValue: String?
            if let eq = name.firstIndex(of: "=") {
                inlineValue = String(name[name.index(after: eq)...])
                name = String(name[..<eq])
            }
            guard let spec = allOptions.first(where: { $0.name == name }) else {
                throw UsageError(message: "unknown option '--\(name)' (a value that begins with '--' goes after '--', as in `lanchat \(self.name) -- \(token)`)")
            }
            if spec.valueName == nil {
                guard inlineValue == nil else { throw UsageError(message: "option '--\(name)' takes no value") }
                parsed.flags.insert(name)
                continue
            }
            let value: String
            if let inlineValue {
                value = inlineValue
            } else {
                guard index < tokens.count else { throw UsageError(message: "missing value for '--\(name) \(spec.valueName!)'") }
                value = tokens[index]
                index += 1
            }
            if !spec.repeatable, parsed.options[name] != nil {
                throw UsageError(message: "option '--\(name)' given more than once")
            }
            parsed.options[name, default: []].append(value)
        }
        if parsed.wantsHelp { return parsed }
        let required = arguments.filter { !$0.optional }.count
        if parsed.positionals.count < required {
            let missing = arguments[parsed.positionals.count]
            throw UsageError(message: "missing expected argument '\(missing.name)'")
        }
        if parsed.positionals.count > arguments.count {
            throw UsageError(message: "unexpected argument '\(parsed.positionals[arguments.count])'")
        }
        return parsed
    }
}
