import Foundation
import Testing

/// Nothing documented goes untested: reads Protocol.md §9 and the README, and checks that every
/// limit they state is in `LimitCoverage`, that every entry there is still stated, and that
/// every test an entry names exists. Adding a row to §9 (or to the README's table of limits)
/// without a test fails here.
@Suite("Every documented limit has a test")
struct LimitCoverageTests {
    /// The repository: three levels above this file (Tests/NodeTests/LimitCoverageTests.swift).
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static func text(_ name: String) throws -> String {
        try String(contentsOf: root.appendingPathComponent(name), encoding: .utf8)
    }

    /// Runs of whitespace (line breaks included) as one space, so phrases match across lines.
    static func collapsed(_ text: String) -> String {
        text.split(whereSeparator: { $0.isWhitespace }).joined(separator: " ")
    }

    /// Protocol.md §9, from its heading to the next section's.
    static func section9() throws -> String {
        let document = try text("Protocol.md")
        let start = try #require(document.range(of: "\n## 9. "), "Protocol.md has no §9")
        let end = document.range(of: "\n## 10. ", range: start.upperBound..<document.endIndex)?.lowerBound ?? document.endIndex
        return String(document[start.upperBound..<end])
    }

    /// The first cell of each body row of the Markdown tables in `text`.
    static func tableRows(_ text: String) -> [String] {
        text.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.filter { $0.hasPrefix("|") }
            .compactMap { line -> String? in
                let cells = line.split(separator: "|", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
                guard cells.count > 2 else { return nil }
                let first = cells[1]
                if first == "limit" || first.allSatisfy({ $0 == "-" || $0 == ":" }) { return nil }  // header, separator
                return first
            }
    }

    static func names(_ source: CoveredLimit.Source) -> [String] {
        LimitCoverage.all.filter { $0.source == source }.map(\.limit)
    }

    static func expectSame(_ documented: [String], _ registered: [String], _ what: String) {
        let missing = documented.filter { !registered.contains($0) }
        let stale = registered.filter { !documented.contains($0) }
        #expect(missing.isEmpty, "\(what) with no entry in LimitCoverage (add a test and an entry): \(missing)")
        #expect(stale.isEmpty, "LimitCoverage entries for \(what) that are no longer documented: \(stale)")
        #expect(Set(registered).count == registered.count, "\(what) registered twice: \(registered)")
    }

    @Test("every row of Protocol.md §9's table has tests, and every entry names a row")
    func protocolTable() throws {
        let rows = Self.tableRows(try Self.section9())
        #expect(rows.count >= 25, "the §9 table was not found whole: \(rows)")
        Self.expectSame(rows, Self.names(.protocolTable), "rows of Protocol.md §9")
    }

    @Test("every offence, the ban's length and each rule of §9's ban paragraph have tests")
    func protocolBans() throws {
        let section = try Self.section9()
        let prose = section.components(separatedBy: "\n").dropFirst().filter { !$0.hasPrefix("|") }.joined(separator: "\n")  // not the heading
        let flat = Self.collapsed(prose)
        // The offences, listed in parentheses after "breaks the protocol".
        let opening = try #require(flat.range(of: "A peer that breaks the protocol ("), "the ban paragraph changed its opening")
        let close = try #require(flat.range(of: ")", range: opening.upperBound..<flat.endIndex))
        let offences = flat[opening.upperBound..<close.lowerBound].components(separatedBy: ", ")
        #expect(offences.count >= 8, "\(offences)")
        let registered = Self.names(.protocolProse)
        for offence in offences {
            #expect(registered.contains(offence), "the offence '\(offence)' of §9 has no entry in LimitCoverage")
        }
        // Every phrase registered is still in §9.
        for phrase in registered {
            #expect(flat.contains(phrase), "LimitCoverage names '\(phrase)', which §9 no longer says")
        }
        // Every paragraph and bullet of the prose states something a registered phrase covers.
        let blocks = prose.components(separatedBy: "\n\n").flatMap { $0.components(separatedBy: "\n- ") }
            .map(Self.collapsed).filter { !$0.isEmpty }
        #expect(blocks.count >= 4, "\(blocks)")
        for block in blocks {
            #expect(registered.contains { block.contains($0) }, "this part of §9 has no entry in LimitCoverage: \(block)")
        }
    }

    @Test("every row of the README's table of limits has tests, and every entry names a row")
    func readmeTable() throws {
        let readme = try Self.text("README.md")
        let start = try #require(readme.range(of: "<!-- limits -->"), "the README has no table of limits")
        let end = try #require(readme.range(of: "<!-- /limits -->", range: start.upperBound..<readme.endIndex))
        let rows = Self.tableRows(String(readme[start.upperBound..<end.lowerBound]))
        #expect(rows.count >= 5, "\(rows)")
        Self.expectSame(rows, Self.names(.readmeTable), "rows of the README's table of limits")
    }

    @Test("every quantity the README's prose states is a registered limit or is marked as none")
    func readmeProse() throws {
        var readme = try Self.text("README.md")
        // Code blocks are examples, and the table of limits has its own test.
        for (open, close) in [("```", "```"), ("<!-- limits -->", "<!-- /limits -->")] {
            while let start = readme.range(of: open), let end = readme.range(of: close, range: start.upperBound..<readme.endIndex) {
                readme.removeSubrange(start.lowerBound..<end.upperBound)
            }
        }
        let flat = Self.collapsed(readme)
        let phrases = Self.names(.readmeProse)
        for phrase in phrases + LimitCoverage.readmeNotLimits {
            #expect(flat.contains(phrase), "LimitCoverage names '\(phrase)', which the README no longer says")
        }
        // Where each registered phrase (or marked non-limit) lies in the README.
        var covered: [Range<String.Index>] = []
        for phrase in phrases + LimitCoverage.readmeNotLimits {
            var from = flat.startIndex
            while let found = flat.range(of: phrase, range: from..<flat.endIndex) {
                covered.append(found)
                from = found.upperBound
            }
        }
        let quantity = try Regex(#"\d[\d,]*(\.\d+)? ?(KiB|MiB|GiB|bytes|ms|s|seconds|minutes|connections)\b"#)
        let found: [Range<String.Index>] = flat.matches(of: quantity).map { $0.range }
        #expect(found.count >= phrases.count, "the scan found too little: \(found.map { String(flat[$0]) })")
        for range in found {
            let inside = covered.contains { phrase in phrase.lowerBound <= range.lowerBound && range.upperBound <= phrase.upperBound }
            guard !inside else { continue }
            let from = flat.index(range.lowerBound, offsetBy: -40, limitedBy: flat.startIndex) ?? flat.startIndex
            let to = flat.index(range.upperBound, offsetBy: 40, limitedBy: flat.endIndex) ?? flat.endIndex
            Issue.record("the README states '\(String(flat[range]))' with no entry in LimitCoverage (a test, or readmeNotLimits): ...\(String(flat[from..<to]))...")
        }
    }

    @Test("every test an entry names exists, as an @Test function of that suite")
    func testsExist() throws {
        var sources: [String: [String]] = [:]  // directory -> file texts
        func files(in directory: String) -> [String] {
            if let known = sources[directory] { return known }
            let url = Self.root.appendingPathComponent("Tests").appendingPathComponent(directory)
            let names = (try? FileManager.default.contentsOfDirectory(atPath: url.path)) ?? []
            let texts = names.filter { $0.hasSuffix(".swift") }.compactMap {
                try? String(contentsOf: url.appendingPathComponent($0), encoding: .utf8)
            }
            sources[directory] = texts
            return texts
        }
        for entry in LimitCoverage.all {
            #expect(!entry.tests.isEmpty, "'\(entry.limit)' names no test")
            for name in entry.tests {
                let parts = name.split(separator: "/")
                let member = parts.last?.split(separator: ".") ?? []
                guard parts.count == 2, member.count == 2 else {
                    Issue.record("'\(name)' is not Directory/Type.function")
                    continue
                }
                let (type, function) = (String(member[0]), String(member[1]))
                let found = files(in: String(parts[0])).contains { text in
                    guard text.contains("struct \(type) ") || text.contains("extension \(type) ") else { return false }
                    let lines = text.components(separatedBy: "\n")
                    return lines.indices.contains { i in
                        lines[i].contains("func \(function)(") && lines[max(0, i - 3)...i].contains { $0.contains("@Test") }
                    }
                }
                #expect(found, "'\(entry.limit)' names \(name), which is not an @Test function in Tests/\(parts[0])")
            }
        }
    }
}
