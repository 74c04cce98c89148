import Foundation
import Testing
@testable import CLI

@Suite("CLI users")
struct UserCommandsTests {
    @Test("users search and list print one line per user, or JSON")
    func searchAndList() throws {
        let cli = CLIHarness()
        let id = cli.run("init", "--name", "Nguyễn Văn An", "--email", "an@example.vn").line
        #expect(cli.run("users", "search", "nguyen").line == "Nguyễn Văn An <an@example.vn>  \(id)  cli")
        #expect(cli.run("users", "search", "VAN AN", "--limit", "5").line == "Nguyễn Văn An <an@example.vn>  \(id)  cli")
        #expect(cli.run("users", "list").line == "Nguyễn Văn An <an@example.vn>  \(id)  cli")
        let json = cli.run("users", "search", "an", "--json").line
        let entries = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [[String: Any]])
        #expect(entries.count == 1)
        #expect(entries.first?["uid"] as? String == id)
        #expect(entries.first?["name"] as? String == "Nguyễn Văn An")
        #expect(entries.first?["online"] as? Bool == false)
        #expect(entries.first?["lastSeen"] is NSNull)
        let none = cli.run("users", "search", "zzz")
        #expect(none.status == 0 && none.text.isEmpty && none.err.contains("no users match"))
        #expect(cli.run("users", "search", "zzz", "--json").line == "[]")
        cli.run("delete", "/users/\(id)")
        #expect(cli.run("users", "list", "--json").line == "[]")
    }

    @Test("usage errors: empty query, missing query, unknown action")
    func usage() {
        let cli = CLIHarness()
        cli.run("init", "--name", "Alice Smith")
        let blank = cli.run("users", "search", "   ")
        #expect(blank.status == 64 && blank.err.contains("empty"))
        #expect(cli.run("users", "search").status == 64)
        #expect(cli.run("users", "list", "alice").status == 64)
        #expect(cli.run("users", "find", "alice").status == 64)
        #expect(cli.run("users", "search", "alice", "--limit", "0").status == 64)
    }
}
