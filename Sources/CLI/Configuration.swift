import Foundation
import Store
import Transport

/// The settings of `lanchat run`, from configuration files and the command line.
///
/// Every `run` option can be written in a configuration file as `key = value`, the key being the
/// option's name without the dashes. The files, the later winning over the earlier:
///
/// 1. the user file: `--config FILE` if given, else `$XDG_CONFIG_HOME/lanchat/config`, else
///    `~/.config/lanchat/config`;
/// 2. the data directory's file, `DATA/config`;
///
/// and the command line wins over both. A missing file is no error; an unknown key or a bad value
/// is, and is reported with the file and line. The format: one `key = value` per line; `#` starts
/// a comment line; blank lines are ignored; a value may be wrapped in double quotes (kept
/// verbatim inside); a flag takes `true` or `false`; a repeatable option (`peer`,
/// `discovery-interface`) is given on one line each, and the values of the file that wins for a
/// key replace those of the others.
struct Settings {
    /// Where a value came from.
    enum Source: Equatable, CustomStringConvertible {
        case defaultValue
        case file(path: String, line: Int)
        case commandLine

        var description: String {
            switch self {
            case .defaultValue: return "default"
            case let .file(path, line): return "\(path):\(line)"
            case .commandLine: return "command line"
            }
        }
    }

    /// The values in effect, as if they had all been given on the command line.
    var arguments: ParsedArguments
    /// Where each option's value came from; options absent here have their default.
    var sources: [String: Source]
    /// The files consulted, lowest precedence first, and whether each exists.
    var files: [(path: String, exists: Bool)]

    func source(_ option: String) -> Source { sources[option] ?? .defaultValue }
}

/// One `key = value` line of a configuration file.
struct ConfigEntry: Equatable {
    let key: String
    let value: String
    let line: Int
}

enum ConfigFile {
    /// The file name, in the user's configuration directory (under `lanchat/`) and in the data directory.
    static let name = "config"

    /// The user file: `$XDG_CONFIG_HOME/lanchat/config`, else `~/.config/lanchat/config`.
    static func userPath(environment: [String: String]) -> String {
        if let xdg = environment["XDG_CONFIG_HOME"], xdg.hasPrefix("/") { return xdg + "/lanchat/" + name }
        return (environment["HOME"] ?? ".") + "/.config/lanchat/" + name
    }

    static func dataPath(_ directory: DataDirectory) -> String { directory.path + "/" + name }

    /// Parses a file's text against `options` (the options a file may set): every key must be one
    /// of them, every value valid for it.
    static func parse(_ text: String, path: String, options: [OptionSpec]) throws(CommandFailure) -> [ConfigEntry] {
        var entries = [ConfigEntry]()
        var seen = Set<String>()
        for (index, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let number = index + 1
            let line = rawLine.trimmingCharacters(in: .whitespaces.union(CharacterSet(charactersIn: "\r")))
            if line.isEmpty || line.hasPrefix("#") { continue }
            guard let eq = line.firstIndex(of: "=") else {
                throw CommandFailure("\(path):\(number): expected 'key = value', got '\(line)'")
            }
            var key = line[..<eq].trimmingCharacters(in: .whitespaces)
            if key.hasPrefix("--") { key.removeFirst(2) }
            var value = line[line.index(after: eq)...].trimmingCharacters(in: .whitespaces)
            if value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") { value = String(value.dropFirst().dropLast()) }
            guard let spec = options.first(where: { $0.name == key }) else {
                let known = options.map(\.name).joined(separator: ", ")
                throw CommandFailure("\(path):\(number): unknown key '\(key)' (known keys: \(known))")
            }
            if !spec.repeatable, seen.contains(key) {
                throw CommandFailure("\(path):\(number): '\(key)' is set twice in this file")
            }
            seen.insert(key)
            if let problem = RunOptions.problem(with: value, for: spec) {
                throw CommandFailure("\(path):\(number): bad value for '\(key)': \(problem)")
            }
            entries.append(ConfigEntry(key: key, value: value, line: number))
        }
        return entries
    }

    /// Reads and parses the file at `path`; nil when there is none.
    static func load(_ path: String, options: [OptionSpec]) throws(CommandFailure) -> [ConfigEntry]? {
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw CommandFailure("cannot read the configuration file \(path)")
        }
        guard let text = String(data: data, encoding: .utf8) else {
            throw CommandFailure("\(path): not UTF-8 text")
        }
        return try parse(text, path: path, options: options)
    }

    /// The settings of a command whose configurable options are `options`: its command line
    /// merged over the files.
    static func resolve(_ commandLine: ParsedArguments, options: [OptionSpec], directory: DataDirectory,
                        environment: [String: String]) throws(CommandFailure) -> Settings {
        let userPath = commandLine.value("config") ?? userPath(environment: environment)
        let paths = [userPath, dataPath(directory)]
        var files = [(path: String, exists: Bool)]()
        var loaded = [(path: String, entries: [ConfigEntry])]()
        for path in paths {
            let entries = try load(path, options: options)
            files.append((path, entries != nil))
            if let entries { loaded.append((path, entries)) }
        }
        if let given = commandLine.value("config"), !files[0].exists {
            throw CommandFailure("no configuration file at \(given)")
        }
        var merged = commandLine
        var sources = [String: Settings.Source]()
        for spec in options {
            if commandLine.options[spec.name] != nil || commandLine.flags.contains(spec.name) {
                sources[spec.name] = .commandLine
                continue
            }
            // The file of highest precedence that sets the key supplies all of its values.
            let winner = loaded.reversed().lazy
                .map { file in (path: file.path, entries: file.entries.filter { $0.key == spec.name }) }
                .first { !$0.entries.isEmpty }
            guard let entries = winner?.entries, let path = winner?.path else { continue }
            sources[spec.name] = .file(path: path, line: entries[0].line)
            if spec.valueName == nil {
                if RunOptions.isTrue(entries[0].value) { merged.flags.insert(spec.name) }
            } else {
                merged.options[spec.name] = entries.map(\.value)
            }
        }
        return Settings(arguments: merged, sources: sources, files: files)
    }
}

/// The options of `lanchat run`, which `config` and `doctor` share, with their defaults and checks.
enum RunOptions {
    static let specs: [OptionSpec] = [
        OptionSpec(name: "listen", valueName: "HOST:PORT", help: "Session address (default 0.0.0.0:0, a free port; 0.0.0.0 also listens on [::])."),
        OptionSpec(name: "api", valueName: "HOST:PORT", help: "Local API address (default 127.0.0.1:0, a free port)."),
        OptionSpec(name: "api-token", valueName: "TOKEN", help: "The API's bearer token (default: the one in the data directory)."),
        OptionSpec(name: "api-public", valueName: nil, help: "Allow an --api address other than loopback."),
        OptionSpec(name: "network", valueName: "NAME", help: "Join the public network NAME (default: lanchat)."),
        OptionSpec(name: "network-key-file", valueName: "FILE", help: "Join the private network whose key is in FILE."),
        OptionSpec(name: "peer", valueName: "HOST:PORT", help: "Also keep a session with this peer (repeatable).", repeatable: true),
        OptionSpec(name: "no-discovery", valueName: nil, help: "Send and hear no beacons; use --peer only."),
        OptionSpec(name: "discovery-port", valueName: "PORT", help: "UDP port of beacons (default 47777)."),
        OptionSpec(name: "discovery-interface", valueName: "NAME", help: "Send beacons only on this interface, e.g. lo (repeatable; default: all).", repeatable: true),
        OptionSpec(name: "log-format", valueName: "FORMAT", help: "Log lines as 'text' (default) or 'json' (one object per line)."),
    ]

    /// `--config FILE`: taken by every command that reads the configuration.
    static let configOption = OptionSpec(name: "config", valueName: "FILE",
                                         help: "The user configuration file (default: $XDG_CONFIG_HOME/lanchat/config, else ~/.config/lanchat/config).")

    /// What `lanchat config` shows for an option nobody set.
    static let defaults: [String: String] = [
        "listen": "0.0.0.0:0", "api": "127.0.0.1:0", "api-token": "(the one in DATA/api.token)",
        "api-public": "false", "network": "lanchat", "network-key-file": "(none)", "peer": "(none)",
        "no-discovery": "false", "discovery-port": "47777", "discovery-interface": "(all)", "log-format": "text",
    ]

    static func isTrue(_ value: String) -> Bool { ["true", "yes", "on", "1"].contains(value.lowercased()) }
    static func isBool(_ value: String) -> Bool { isTrue(value) || ["false", "no", "off", "0"].contains(value.lowercased()) }

    /// Why `value` is not valid for `spec`, or nil when it is.
    static func problem(with value: String, for spec: OptionSpec) -> String? {
        if spec.valueName == nil { return isBool(value) ? nil : "expected true or false, got '\(value)'" }
        if value.isEmpty { return "empty value" }
        switch spec.name {
        case "listen", "api", "peer":
            return (try? SocketAddress.parse(value)) == nil ? "expected HOST:PORT with a numeric host, got '\(value)'" : nil
        case "discovery-port":
            guard let port = UInt16(value), port > 0 else { return "expected a port number (1-65535), got '\(value)'" }
            return nil
        case "log-format":
            return LogFormat(rawValue: value) == nil ? "expected 'text' or 'json', got '\(value)'" : nil
        default:
            return nil
        }
    }
}

/// `lanchat config`: the settings of `run` in effect, and where each comes from.
enum ConfigCommand {
    static let config = Command(spec: CommandSpec(
        name: "config",
        abstract: "Show the settings `lanchat run` would use and where each comes from.",
        discussion: """
            Every option of `lanchat run` can be set in a configuration file, one `key = value` per line \
            (the option's name without dashes; `#` comments; flags take true or false; repeat a line for \
            each peer). Files read, the later winning: the user file ($XDG_CONFIG_HOME/lanchat/config, \
            else ~/.config/lanchat/config, or --config FILE), then DATA/config in the data directory; \
            options on the command line win over both. Give `config` the same options as `run` to see \
            their effect. Exits 1 when a file has an unknown key or a bad value.
            """,
        options: RunOptions.specs + [RunOptions.configOption]
    )) { context in
        let settings = try ConfigFile.resolve(context.arguments, options: RunOptions.specs,
                                              directory: context.dataDirectory, environment: context.console.environment)
        let console = context.console
        console.print("data directory: \(context.dataDirectory.path)")
        for file in settings.files {
            console.print("config file:    \(file.path)\(file.exists ? "" : " (none)")")
        }
        console.print("")
        for spec in RunOptions.specs {
            let value: String
            if spec.valueName == nil {
                value = settings.arguments.flag(spec.name) ? "true" : "false"
            } else if let values = settings.arguments.options[spec.name] {
                value = values.joined(separator: ", ")
            } else {
                value = RunOptions.defaults[spec.name] ?? ""
            }
            let padded = spec.name.padding(toLength: 21, withPad: " ", startingAt: 0)
            let shown = spec.name == "api-token" && settings.sources[spec.name] != nil ? "(set)" : value
            console.print("\(padded)\(shown.padding(toLength: max(shown.count, 28), withPad: " ", startingAt: 0))  \(settings.source(spec.name))")
        }
    }
}
