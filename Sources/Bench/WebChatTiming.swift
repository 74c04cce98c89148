import Foundation

/// The web chat's time to first show a node's data, as a user opening it sees it: measured in
/// headless Chromium by `Tools/web-scale.py` (the conversation list from the page's navigation
/// start, then the newest conversation's last messages from a click), each run with a fresh
/// browser profile. The time a new profile's browser takes before it starts to navigate (up to
/// seconds, now and then) is kept apart: it is the same for any page.
/// Needs Chromium, chromedriver and the Tools python environment; without them the benchmark
/// says why instead of a figure.
struct WebChatTiming {
    var list: [Double] = []
    var messages: [Double] = []
    /// From the call that asks the browser to navigate until it starts to.
    var beforeNavigation: [Double] = []
    var messagesShown = 0
    var conversationsShown = 0

    /// Runs the script against the node running on `data`, from the checkout the benchmark is run in.
    static func measure(lanchat: String, data: String, runs: Int = 3) -> Result<WebChatTiming, BenchError> {
        let tools = FileManager.default.currentDirectoryPath + "/Tools"
        let script = tools + "/web-scale.py"
        guard FileManager.default.fileExists(atPath: script) else { return .failure(BenchError("run from the checkout: no Tools/web-scale.py")) }
        for tool in ["/usr/bin/chromium", "/usr/bin/chromedriver"] where !FileManager.default.isExecutableFile(atPath: tool) {
            return .failure(BenchError("\(tool) is not installed (Tools/web-test.sh installs it)"))
        }
        guard let python = output(tools + "/python-env", [])?.trimmingCharacters(in: .whitespacesAndNewlines), !python.isEmpty else {
            return .failure(BenchError("no python environment (Tools/python-env)"))
        }
        guard let text = output(python, [script, "--lanchat", lanchat, "--data", data, "--runs", String(runs)]),
              let json = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any],
              let results = json["runs"] as? [[String: Any]], !results.isEmpty else {
            return .failure(BenchError("Tools/web-scale.py gave no figures"))
        }
        var timing = WebChatTiming()
        for run in results {
            guard let list = run["list"] as? Double, let messages = run["messages_after_click"] as? Double else {
                return .failure(BenchError("Tools/web-scale.py gave a run without figures"))
            }
            timing.list.append(list)
            timing.messages.append(messages)
            if let before = run["browser_before_navigation"] as? Double { timing.beforeNavigation.append(before) }
            timing.messagesShown = run["messages_shown"] as? Int ?? 0
            timing.conversationsShown = run["conversations_shown"] as? Int ?? 0
        }
        return .success(timing)
    }

    /// A process's standard output, nil unless it exits with 0 (its standard error is dropped).
    private static func output(_ executable: String, _ arguments: [String]) -> String? {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return nil }
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return process.terminationStatus == 0 ? String(decoding: data, as: UTF8.self) : nil
    }
}
