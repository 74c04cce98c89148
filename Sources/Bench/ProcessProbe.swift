import Dispatch
import Foundation

/// A `lanchat` process started by a benchmark, with its memory sampled from /proc while it runs:
/// anonymous memory (the heap, SQLite's page cache, thread stacks: what a node really costs)
/// apart from file-backed pages (the mapped store, the executable), which the kernel can drop.
final class ProcessProbe: @unchecked Sendable {
    let process = Process()
    private let lock = NSLock()
    private var peakAnon = 0
    private var peakFile = 0
    private var sampling = true
    private let done = DispatchSemaphore(value: 0)

    /// Starts `executable` with `arguments`, its output going to `log`.
    init(_ executable: String, _ arguments: [String], log: String) throws {
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        FileManager.default.createFile(atPath: log, contents: nil)
        let handle = FileHandle(forWritingAtPath: log)
        handle?.seekToEndOfFile()
        process.standardOutput = handle
        process.standardError = handle
        try process.run()
        let pid = process.processIdentifier
        Thread.detachNewThread { [self] in
            while true {
                lock.lock()
                let go = sampling
                lock.unlock()
                guard go, let (anon, file) = ProcessProbe.memory(of: pid) else { break }
                lock.lock()
                peakAnon = max(peakAnon, anon)
                peakFile = max(peakFile, file)
                lock.unlock()
                usleep(20_000)
            }
            done.signal()
        }
    }

    /// (RssAnon, RssFile) of `pid` in bytes, from /proc/PID/status; nil once it is gone.
    static func memory(of pid: Int32) -> (anon: Int, file: Int)? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        var anon: Int?, file: Int?
        for line in text.split(separator: "\n") {
            let parts = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard parts.count >= 2, let kb = Int(parts[1]) else { continue }
            if parts[0] == "RssAnon:" { anon = kb * 1024 }
            if parts[0] == "RssFile:" { file = kb * 1024 }
        }
        guard let anon, let file else { return nil }
        return (anon, file)
    }

    /// CPU seconds (user and system, every thread) `pid` has used, from /proc/PID/stat; nil once
    /// it is gone.
    static func cpuSeconds(of pid: Int32) -> Double? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = text.lastIndex(of: ")") else { return nil }
        // After "pid (comm)" come the state (field 3) and numbers; utime and stime are fields 14 and 15.
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// The CPU seconds used so far.
    var cpuSeconds: Double? { ProcessProbe.cpuSeconds(of: process.processIdentifier) }

    /// The memory now.
    var current: (anon: Int, file: Int)? { ProcessProbe.memory(of: process.processIdentifier) }

    /// The highest anonymous and file-backed memory seen since the last reset.
    var peak: (anon: Int, file: Int) {
        lock.lock(); defer { lock.unlock() }
        return (peakAnon, peakFile)
    }

    func resetPeak() {
        lock.lock(); defer { lock.unlock() }
        peakAnon = 0
        peakFile = 0
    }

    /// Waits for the process to exit; returns its status.
    @discardableResult
    func wait() -> Int32 {
        process.waitUntilExit()
        stopSampling()
        return process.terminationStatus
    }

    /// Asks the process to stop (SIGTERM) and waits for it. The request is repeated every
    /// second: `lanchat run` ignores SIGTERM for a moment while it installs its handler.
    func stop() {
        while process.isRunning {
            process.terminate()
            let deadline = Date().addingTimeInterval(1)
            while process.isRunning, Date() < deadline { usleep(10_000) }
        }
        wait()
    }

    private func stopSampling() {
        lock.lock()
        let was = sampling
        sampling = false
        lock.unlock()
        if was { done.wait() }
    }
}

/// Runs `lanchat` to completion; throws with its output if it fails.
@discardableResult
func runLanchat(_ executable: String, _ arguments: [String]) throws -> String {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    let pipe = Pipe()
    process.standardOutput = pipe
    process.standardError = pipe
    try process.run()
    let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    guard process.terminationStatus == 0 else { throw BenchError("lanchat \(arguments.joined(separator: " ")) failed: \(output)") }
    return output
}

/// The `lanchat` executable built beside this benchmark.
func lanchatExecutable() throws -> String {
    let me = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
    let path = URL(fileURLWithPath: me).deletingLastPathComponent().appendingPathComponent("lanchat").path
    guard FileManager.default.isExecutableFile(atPath: path) else { throw BenchError("no lanchat executable beside \(me); build it first") }
    return path
}

/// A TCP port on loopback that was free a moment ago.
func freeLoopbackPort() throws -> UInt16 {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw BenchError("socket failed") }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
    }
    guard bound else { throw BenchError("bind failed") }
    return UInt16(bigEndian: address.sin_port)
}
