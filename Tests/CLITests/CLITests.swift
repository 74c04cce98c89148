import Foundation
import Testing
@testable import CLI

@Suite("CLI")
struct CLITests {
    @Test("set, update, get, delete give Firebase's results")
    func treeOperations() {
        let cli = CLIHarness()
        #expect(cli.run("init", "--name", "Alice Smith").status == 0)
        #expect(cli.run("set", "/a", #"{"b":1,"c":{"d":2}}"#).status == 0)
        #expect(cli.run("update", "/a", #"{"c/d":3,"e":null}"#).status == 0)
        #expect(cli.run("get", "/a").line == #"{"b":1,"c":{"d":3}}"#)
        #expect(cli.run("delete", "/a/b").status == 0)
        #expect(cli.run("get", "/a").line == #"{"c":{"d":3}}"#)
        #expect(cli.run("get", "/nothing/here").line == "null")
    }

    @Test("init writes the profile and whoami prints the id")
    func identity() {
        let cli = CLIHarness()
        let id = cli.run("init", "--name", "Nguyễn Văn An", "--email", "an@example.com").line
        #expect(id.count == 43)
        #expect(cli.run("whoami").line == id)
        #expect(cli.run("get", "/users/\(id)").line == #"{"email":"an@example.com","first_name":"Nguyễn","last_name":"Văn An","platform":"cli"}"#)
        let again = cli.run("init", "--name", "Someone Else")
        #expect(again.status == 1 && again.err.contains("already holds a lanchat identity"))
        #expect(cli.run("whoami").line == id)
    }

    @Test("push prints monotonic keys; send and messages show a conversation")
    func chat() {
        let cli = CLIHarness()
        cli.run("init", "--name", "박준영")
        let k1 = cli.run("push", "/list", "1").line
        let k2 = cli.run("push", "/list", "2").line
        #expect(k1.count == 20 && k1 < k2)
        for text in ["first", "second", "third"] { #expect(cli.run("send", "general", text).status == 0) }
        let lines = cli.run("messages", "general").text.split(separator: "\n")
        #expect(lines.count == 3)
        #expect(lines[0].hasSuffix("박준영: first") && lines[2].hasSuffix("박준영: third"))
        let last = cli.run("messages", "general", "--limit", "2").text.split(separator: "\n")
        #expect(last.map { $0.hasSuffix("second") || $0.hasSuffix("third") } == [true, true])
    }

    @Test("help goes to stdout, usage errors to stderr with status 64")
    func helpAndUsage() {
        let cli = CLIHarness()
        let help = cli.run("--help", data: false)
        #expect(help.status == 0 && help.text.contains("SUBCOMMANDS:") && help.err.isEmpty)
        let sub = cli.run("help", "set", data: false)
        #expect(sub.status == 0 && sub.text.contains("USAGE: lanchat set"))
        #expect(cli.run("set", "-h", data: false).text.contains("USAGE: lanchat set"))
        let missing = cli.run("set", "/a")
        #expect(missing.status == 64 && missing.err.hasPrefix("Error: missing expected argument 'JSON'") && missing.err.contains("Usage: lanchat set"))
        let unknown = cli.run("frobnicate", data: false)
        #expect(unknown.status == 64 && unknown.err.hasPrefix("Error: unknown subcommand"))
        let option = cli.run("get", "/", "--bogus")
        #expect(option.status == 64 && option.err.contains("unknown option '--bogus'"))
    }

    @Test("values that begin with '-' are values: user ids, numbers, text after '--'")
    func dashValues() throws {
        let spec = CommandSpec(name: "dm", abstract: "", arguments: [ArgumentSpec(name: "USER_ID", help: "")],
                               options: [OptionSpec(name: "limit", valueName: "N", help: "")])
        let id = "-aITy8L4KOMyVryRsXANgN7MhQ0DWzUqBXshax3Tw1s"
        #expect(try spec.parse([id]).positionals == [id])
        #expect(try spec.parse(["--data", "/d", id]).positionals == [id])
        #expect(try spec.parse(["-5"]).positionals == ["-5"])
        #expect(try spec.parse(["-"]).positionals == ["-"])
        #expect(try spec.parse(["--limit", "-3", "x"]).value("limit") == "-3")
        #expect(try spec.parse(["--", "--" + id.dropFirst()]).positionals == ["--" + id.dropFirst()])
        #expect(try spec.parse(["--", "-h"]).positionals == ["-h"])
        #expect(try spec.parse(["-h"]).wantsHelp)
        do {
            _ = try spec.parse(["--" + id.dropFirst()])
            Issue.record("an unknown long option was taken as a value")
        } catch {
            #expect(error.message.contains("unknown option") && error.message.contains("goes after '--'"))
        }
        // Through the whole command: a user id that begins with '-' opens the conversation.
        let cli = CLIHarness()
        cli.run("init", "--name", "Alice Smith")
        let dm = cli.run("dm", id)
        #expect(dm.status == 0 && dm.line.hasPrefix("d_"), "\(dm.err)")
    }

    @Test("bad input gets one clear error and changes nothing")
    func badInput() {
        let cli = CLIHarness()
        let uninitialized = cli.run("get", "/")
        #expect(uninitialized.status == 1 && uninitialized.err.contains("run `lanchat init"))
        cli.run("init", "--name", "Alice Smith")
        cli.run("set", "/a", "1")
        let before = cli.run("export").out
        let badJSON = cli.run("set", "/a", "{nope")
        #expect(badJSON.status == 64 && badJSON.err.contains("invalid JSON at byte"))
        let badPath = cli.run("set", "/a.b", "1")
        #expect(badPath.status == 64 && badPath.err.contains("invalid path"))
        let badKey = cli.run("set", "/a", #"{"x$":1}"#)
        #expect(badKey.status == 64)
        let badUpdate = cli.run("update", "/a", #"{"b":1,"b/c":2}"#)
        #expect(badUpdate.status == 64)
        let foreign = cli.run("set", "/users/iojj3XQJ8ZX9UtstPLpdcspnCb8dlBIb83SIAbQPb1w/first_name", "\"Mallory\"")
        #expect(foreign.status == 1 && foreign.err.contains("permission denied"))
        #expect(cli.run("export").out == before)
        #expect(cli.run("get", "/a").line == "1")
    }

    @Test("a key file that others can read is refused")
    func keyFilePermissions() throws {
        let cli = CLIHarness()
        cli.run("init", "--name", "Alice Smith")
        let key = cli.directory + "/identity.key"
        #expect(chmod(key, 0o644) == 0)
        let open = cli.run("whoami")
        #expect(open.status == 1 && open.err.contains("too open"))
        #expect(chmod(key, 0o600) == 0)
        try Data([1, 2, 3]).write(to: URL(fileURLWithPath: key))
        #expect(chmod(key, 0o600) == 0)
        let short = cli.run("whoami")
        #expect(short.status == 1 && short.err.contains("expected 32 bytes"))
    }
}
