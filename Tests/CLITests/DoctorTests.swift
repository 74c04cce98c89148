import Foundation
import Node
import Testing
@testable import CLI

/// The checks of `lanchat doctor` that need no network: the clocks of peers against the drift
/// bound, and the data directory. The network checks run in Tools/netns-doctor.sh.
@Suite("Doctor")
struct DoctorTests {
    func report(_ body: (inout DoctorReport) -> Void) -> (problems: Int, text: String) {
        var out = [UInt8]()
        let console = Console(writeOut: { out += $0 }, writeErr: { _ in }, readInput: { [] }, environment: [:],
                              nowMillis: { 0 }, outputIsTerminal: false)
        var report = DoctorReport(console: console)
        body(&report)
        return (report.problems, String(decoding: out, as: UTF8.self))
    }

    /// A running node's status as its control channel sends it (the types' initializers are the node's own).
    func status(leads: [Int64?]) -> NodeStatus {
        let peers = leads.enumerated().map { index, lead in
            #"{"userID":"u\#(index)","name":"Peer \#(index)","address":"10.0.0.\#(index):7000","connected":true,"discovered":true"#
                + (lead.map { #","clockLeadMillis":\#($0)"# } ?? "") + "}"
        }
        let json = #"{"userID":"me","name":"Me","listen":"0.0.0.0:7000","network":"n","records":1,"fingerprint":"f","pid":1,"peers":["#
            + peers.joined(separator: ",") + "]}"
        return try! JSONDecoder().decode(NodeStatus.self, from: Data(json.utf8))
    }

    @Test("clocks: within half the drift bound is fine; beyond it a problem that names the peer")
    func clocks() {
        let fine = report { DoctorCommand.checkClocks(status(leads: [2_000, -30_000, nil]), &$0) }
        #expect(fine.problems == 0 && fine.text.hasPrefix("ok       clocks: 2 peer(s) within 2 s"))
        let near = report { DoctorCommand.checkClocks(status(leads: [200_000, 1_000]), &$0) }
        #expect(near.problems == 1 && near.text.contains("Peer 0's clock runs 200 s ahead") && near.text.contains("near the point"))
        let beyond = report { DoctorCommand.checkClocks(status(leads: [400_000]), &$0) }
        #expect(beyond.problems == 1 && beyond.text.contains("its new records are refused"))
        let none = report { DoctorCommand.checkClocks(status(leads: [nil]), &$0) }
        #expect(none.problems == 0 && none.text.hasPrefix("skipped"))
    }

    @Test("data directory: missing, open to others, a readable key")
    func dataDirectory() throws {
        let cli = CLIHarness()
        let missing = report { DoctorCommand.checkDataDirectory(.init(path: cli.directory), &$0) }
        #expect(missing.problems == 1 && missing.text.contains("does not exist"))
        #expect(cli.run("init", "--name", "Alice Smith").status == 0)
        let sound = report { DoctorCommand.checkDataDirectory(.init(path: cli.directory), &$0) }
        #expect(sound.problems == 0 && sound.text.contains("store: passes its integrity check"), "\(sound.text)")
        chmod(cli.directory, 0o750)
        chmod(cli.directory + "/identity.key", 0o644)
        let open = report { DoctorCommand.checkDataDirectory(.init(path: cli.directory), &$0) }
        #expect(open.problems == 2 && open.text.contains("has mode 750") && open.text.contains("chmod 600 \(cli.directory)/identity.key"), "\(open.text)")
    }
}
