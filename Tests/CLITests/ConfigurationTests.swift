import Foundation
import Node
import Testing
@testable import CLI

@Suite("Configuration files, logging and generated documentation")
struct ConfigurationTests {
    func write(_ text: String, to path: String) throws {
        try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try text.write(toFile: path, atomically: true, encoding: .utf8)
    }

    @Test("the format: comments, blank lines, quotes, flags, repeated keys")
    func parsing() throws {
        let text = """
            # a comment
              listen = 0.0.0.0:47800

            peer = 10.0.0.2:47800
            peer=10.0.0.3:47800
            network = "office net"
            api-public = true
            """
        let entries = try ConfigFile.parse(text, path: "f", options: RunOptions.specs)
        #expect(entries == [
            ConfigEntry(key: "listen", value: "0.0.0.0:47800", line: 2),
            ConfigEntry(key: "peer", value: "10.0.0.2:47800", line: 4),
            ConfigEntry(key: "peer", value: "10.0.0.3:47800", line: 5),
            ConfigEntry(key: "network", value: "office net", line: 6),
            ConfigEntry(key: "api-public", value: "true", line: 7),
        ])
    }

    @Test("unknown keys, bad values and malformed lines name the file and line")
    func errors() {
        func message(_ text: String) -> String? {
            do { _ = try ConfigFile.parse(text, path: "/etc/x", options: RunOptions.specs); return nil } catch { return error.message }
        }
        #expect(message("# ok\nlisten = 0.0.0.0:1\nlisen = 1.2.3.4:5")?.hasPrefix("/etc/x:3: unknown key 'lisen'") == true)
        #expect(message("discovery-port = 70000") == "/etc/x:1: bad value for 'discovery-port': expected a port number (1-65535), got '70000'")
        #expect(message("\n\napi-public = maybe") == "/etc/x:3: bad value for 'api-public': expected true or false, got 'maybe'")
        #expect(message("peer = somewhere") == "/etc/x:1: bad value for 'peer': expected HOST:PORT with a numeric host, got 'somewhere'")
        #expect(message("log-format = xml") == "/etc/x:1: bad value for 'log-format': expected 'text' or 'json', got 'xml'")
        #expect(message("listen") == "/etc/x:1: expected 'key = value', got 'listen'")
        #expect(message("listen = 0.0.0.0:1\nlisten = 0.0.0.0:2") == "/etc/x:2: 'listen' is set twice in this file")
    }

    @Test("the data directory's file wins over the user's, the command line over both")
    func precedence() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("lanchat-config-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: root) }
        let data = root + "/data"
        try write("listen = 0.0.0.0:1000\nnetwork = home\npeer = 10.0.0.1:1\npeer = 10.0.0.2:1\nno-discovery = true\n",
                  to: root + "/xdg/lanchat/config")
        try write("# data\nnetwork = office\nno-discovery = false\n", to: data + "/config")
        let environment = ["HOME": root + "/home", "XDG_CONFIG_HOME": root + "/xdg"]
        var commandLine = ParsedArguments()
        commandLine.options["listen"] = ["0.0.0.0:2000"]
        let settings = try ConfigFile.resolve(commandLine, options: RunOptions.specs, directory: .init(path: data), environment: environment)
        #expect(settings.arguments.value("listen") == "0.0.0.0:2000")
        #expect(settings.source("listen") == .commandLine)
        #expect(settings.arguments.value("network") == "office")
        #expect(settings.source("network") == .file(path: data + "/config", line: 2))
        #expect(settings.arguments.values("peer") == ["10.0.0.1:1", "10.0.0.2:1"])
        #expect(settings.source("peer") == .file(path: root + "/xdg/lanchat/config", line: 3))
        #expect(!settings.arguments.flag("no-discovery"))
        #expect(settings.source("no-discovery") == .file(path: data + "/config", line: 3))
        #expect(settings.source("api") == .defaultValue)
        #expect(settings.files.map(\.exists) == [true, true])

        // Without XDG_CONFIG_HOME the user file is ~/.config/lanchat/config; --config replaces it.
        #expect(ConfigFile.userPath(environment: ["HOME": "/home/a"]) == "/home/a/.config/lanchat/config")
        try write("api = 127.0.0.1:9000\n", to: root + "/other.conf")
        commandLine.options["config"] = [root + "/other.conf"]
        let other = try ConfigFile.resolve(commandLine, options: RunOptions.specs, directory: .init(path: data), environment: environment)
        #expect(other.arguments.value("api") == "127.0.0.1:9000")
        #expect(other.arguments.value("network") == "office")
        #expect(other.arguments.values("peer") == [])
        commandLine.options["config"] = [root + "/missing.conf"]
        #expect(throws: CommandFailure.self) {
            try ConfigFile.resolve(commandLine, options: RunOptions.specs, directory: .init(path: data), environment: environment)
        }
    }

    @Test("lanchat config shows each value and its source; a bad file fails with file:line")
    func configCommand() throws {
        let cli = CLIHarness()
        #expect(cli.run("init", "--name", "Alice Smith").status == 0)
        let userFile = cli.directory + "/home/.config/lanchat/config"
        try write("discovery-port = 47900\npeer = 10.0.0.9:47800\n", to: userFile)
        let result = cli.run("config", "--api", "127.0.0.1:8080")
        #expect(result.status == 0)
        let lines = result.text.split(separator: "\n").map(String.init)
        #expect(lines.contains { $0.hasPrefix("discovery-port") && $0.contains("47900") && $0.hasSuffix("\(userFile):1") })
        #expect(lines.contains { $0.hasPrefix("peer ") && $0.contains("10.0.0.9:47800") && $0.hasSuffix("\(userFile):2") })
        #expect(lines.contains { $0.hasPrefix("api ") && $0.contains("127.0.0.1:8080") && $0.hasSuffix("command line") })
        #expect(lines.contains { $0.hasPrefix("listen ") && $0.contains("0.0.0.0:0") && $0.hasSuffix("default") })
        #expect(lines.contains { $0 == "config file:    \(cli.directory)/config (none)" })

        try write("discovery-port = 47900\nbogus = 1\n", to: userFile)
        let bad = cli.run("config")
        #expect(bad.status == 1)
        #expect(bad.err.hasPrefix("Error: \(userFile):2: unknown key 'bogus'"))
        let run = cli.run("run")
        #expect(run.status == 1 && run.err.hasPrefix("Error: \(userFile):2: unknown key 'bogus'"))
    }

    @Test("log lines: one per event, levels, colour only when asked, JSON objects")
    func logLines() throws {
        let date = Date(timeIntervalSince1970: 1_764_623_786.1234)
        let plain = LogWriter(format: .text, colour: false, journal: false) { _ in }
        #expect(plain.render(.warning, "could not connect\nto x", now: date) == "2025-12-01T21:16:26.123Z warning could not connect\\nto x\n")
        let coloured = LogWriter(format: .text, colour: true, journal: false) { _ in }
        #expect(coloured.render(.error, "bad", now: date) == "2025-12-01T21:16:26.123Z \u{1B}[31merror  \u{1B}[0m bad\n")
        let journal = LogWriter(format: .text, colour: false, journal: true) { _ in }
        #expect(journal.render(.info, "discovered x", now: date) == "<6>discovered x\n")
        #expect(journal.render(.error, "e", now: date) == "<3>e\n")
        let json = LogWriter(format: .json, colour: true, journal: true) { _ in }
        let line = json.render(.info, "say \"hi\"\tnow", fields: [("peer", "abc")], now: date)
        #expect(line == #"{"time":"2025-12-01T21:16:26.123Z","level":"info","message":"say \"hi\"\tnow","fields":{"peer":"abc"}}"# + "\n")
        let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
        #expect(object?["message"] as? String == "say \"hi\"\tnow")
        #expect(!LogWriter.isJournal(nil) && !LogWriter.isJournal("1:2"))
    }

    @Test("completion and the manual page come from the command table")
    func documentation() {
        let bash = DocumentationCommands.bashCompletion()
        for command in LanchatCLI.commands {
            #expect(bash.contains(" \(command.spec.name)"))
            #expect(DocumentationCommands.zshCompletion().contains("'\(command.spec.name):"))
            #expect(DocumentationCommands.manPage().contains(".SS \"\(command.spec.name)\""))
        }
        #expect(bash.contains("complete -o filenames -F _lanchat lanchat"))
        let cli = CLIHarness()
        #expect(cli.run("completion", "fish", data: false).status == 64)
        #expect(cli.run("manpage", data: false).text.hasPrefix(".TH LANCHAT 1"))
        #expect(!cli.run("--help", data: false).text.contains("manpage"))
    }
}
