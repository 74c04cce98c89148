import Foundation
import Node
import Store
import Tree

/// The `lanchat` command line: dispatches to subcommands, renders help, and maps failures to
/// exit statuses (0 success, 1 failure, 64 usage error) as swift-argument-parser does.
public enum LanchatCLI {
    static let version = "0.1.0"

    /// The subcommands, in the order help lists them.
    static let commands: [Command] = IdentityCommands.all + TreeCommands.all + ChatCommands.all + PrivateCommands.all + TransferCommands.all + FileCommands.all + NodeCommands.all + [OpenCommand.open] + [WatchCommand.watch] + UserCommands.all + [ConfigCommand.config, DoctorCommand.doctor]

    /// Commands that work but are not listed in the overview (the package build runs them).
    static let hiddenCommands: [Command] = DocumentationCommands.all

    static func command(named name: String) -> Command? {
        (commands + hiddenCommands).first { $0.spec.name == name }
    }

    static var overview: String {
        var lines = [
            "OVERVIEW: lanchat: a peer-to-peer chat node for local networks.",
            "",
            "USAGE: lanchat <subcommand> [options]",
            "",
            "SUBCOMMANDS:",
        ]
        for command in commands {
            let name = command.spec.name
            lines.append("  " + name + String(repeating: " ", count: max(2, 12 - name.count)) + command.spec.abstract)
        }
        lines += ["", "  See 'lanchat help <subcommand>' for detailed help."]
        return lines.joined(separator: "\n") + "\n"
    }

    /// Runs the process's command line and exits with its status.
    public static func main() -> Never {
        // Before any thread of the process starts (`Node.mallocArenasLimited`).
        _ = Node.mallocArenasLimited
        exit(run(Array(CommandLine.arguments.dropFirst()), console: .standard))
    }

    /// Runs one command line; returns the exit status.
    public static func run(_ arguments: [String], console: Console) -> Int32 {
        guard let first = arguments.first else {
            console.writeErr(overview)
            return 64
        }
        switch first {
        case "-h", "--help":
            console.writeOut(ArraySlice(overview.utf8))
            return 0
        case "--version":
            console.print(version)
            return 0
        case "help":
            guard arguments.count > 1 else {
                console.writeOut(ArraySlice(overview.utf8))
                return 0
            }
            guard let command = command(named: arguments[1]) else {
                console.printError("Error: unknown subcommand '\(arguments[1])'")
                console.printError("Usage: lanchat help <subcommand>")
                return 64
            }
            console.writeOut(ArraySlice(command.spec.help.utf8))
            return 0
        default:
            break
        }
        guard let command = command(named: first) else {
            console.printError("Error: unknown subcommand '\(first)'")
            console.printError("Usage: lanchat <subcommand> [options] (see 'lanchat --help')")
            return 64
        }
        do {
            let parsed = try command.spec.parse(Array(arguments.dropFirst()))
            if parsed.wantsHelp {
                console.writeOut(ArraySlice(command.spec.help.utf8))
                return 0
            }
            let context = CommandContext(arguments: parsed, console: console)
            try command.run(context)
            if command.spec.writes {
                // A node running on this directory pushes the new records at once.
                _ = ControlClient.ask(context.dataDirectory, "sync", timeoutSeconds: 2)
            }
            return 0
        } catch let error as UsageError {
            return usageFailure(error.message, command, console)
        } catch let error as TreeError {
            return usageFailure("\(error)", command, console)
        } catch let error as CommandFailure {
            console.printError("Error: \(error.message)")
            return 1
        } catch {
            console.printError("Error: \(error)")
            return 1
        }
    }
}

extension LanchatCLI {
    static func usageFailure(_ message: String, _ command: Command, _ console: Console) -> Int32 {
        console.printError("Error: \(message)")
        console.printError("Usage: \(command.spec.usage)")
        console.printError("  See 'lanchat help \(command.spec.name)'.")
        return 64
    }
}

/// A subcommand: its declaration and what it does.
struct Command: Sendable {
    let spec: CommandSpec
    let run: @Sendable (CommandContext) throws -> Void
}

/// What a running command can reach: its arguments, the console, and its data directory.
struct CommandContext {
    let arguments: ParsedArguments
    let console: Console

    var dataDirectory: DataDirectory {
        DataDirectory.resolve(option: arguments.value("data"), environment: console.environment)
    }

    /// The positional argument at `index`.
    func positional(_ index: Int) -> String { arguments.positionals[index] }

    /// Parses a path argument; a bad path is a usage error.
    func path(_ index: Int) throws -> Path {
        do { return try Path(positional(index)) } catch { throw UsageError(message: "invalid path '\(positional(index))': \(error)") }
    }

    /// Parses a JSON argument; bad JSON is a usage error.
    func json(_ index: Int) throws -> JSONValue {
        do { return try JSONValue.parse(positional(index)) } catch { throw UsageError(message: "\(error)") }
    }

    /// Parses a positive integer option.
    func positiveInt(_ name: String) throws -> Int? {
        guard let text = arguments.value(name) else { return nil }
        guard let n = Int(text), n > 0 else { throw UsageError(message: "--\(name) must be a positive integer, got '\(text)'") }
        return n
    }

    /// Opens this command's node: its identity and store.
    func openNode() throws -> LocalNode {
        try LocalNode.open(dataDirectory)
    }
}
