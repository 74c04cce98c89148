import Foundation
@testable import CLI

/// Runs `lanchat` commands in-process against a temporary data directory, capturing output.
final class CLIHarness: @unchecked Sendable {
    let directory: String
    var now: UInt64 = 1_764_000_000_000
    var input: [UInt8] = []

    struct Result {
        let status: Int32
        let out: [UInt8]
        let err: String
        var text: String { String(decoding: out, as: UTF8.self) }
        var line: String { text.trimmingCharacters(in: .newlines) }
    }

    init() {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("lanchat-cli-\(UUID().uuidString)").path
    }

    deinit { try? FileManager.default.removeItem(atPath: directory) }

    @discardableResult
    func run(_ arguments: String..., data: Bool = true) -> Result { run(arguments, data: data) }

    func run(_ arguments: [String], data: Bool = true) -> Result {
        var out = [UInt8]()
        var err = ""
        now += 1
        let console = Console(
            writeOut: { out += $0 }, writeErr: { err += $0 }, readInput: { [input] in input },
            environment: ["HOME": directory + "/home"], nowMillis: { [now] in now }, outputIsTerminal: false)
        let status = LanchatCLI.run(arguments + (data ? ["--data", directory] : []), console: console)
        return Result(status: status, out: out, err: err)
    }
}
