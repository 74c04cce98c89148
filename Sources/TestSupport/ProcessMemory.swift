import Foundation

/// This process's memory as /proc/self/status tells it, for tests and benchmarks that bound
/// what an operation costs: a figure read once, or the highest one seen while an operation runs.
public enum ProcessMemory {
    /// A figure of /proc/self/status (`RssAnon`, `VmRSS`, `VmHWM`...) in bytes; 0 when unknown.
    public static func status(_ field: String) -> Int {
        guard let text = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
        for line in text.split(separator: "\n") where line.hasPrefix(field + ":") {
            let parts = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            return parts.count > 1 ? (Int(parts[1]) ?? 0) * 1024 : 0
        }
        return 0
    }

    /// Runs `body` while another thread samples `field` every `interval` microseconds; returns
    /// the highest figure seen, the one read once `body` returned included. Why a thread:
    /// memory that a step takes and gives back before it returns is what a peak must catch.
    public static func peak<T>(of field: String = "RssAnon", everyMicroseconds interval: UInt32 = 2_000,
                               _ body: () throws -> T) rethrows -> (T, Int) {
        let peak = Peak()
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            while true {
                let figure = status(field)
                peak.lock.lock()
                peak.value = max(peak.value, figure)
                let go = peak.running
                peak.lock.unlock()
                if !go { break }
                usleep(interval)
            }
            done.signal()
        }
        let result = try body()
        peak.lock.lock()
        peak.running = false
        peak.lock.unlock()
        done.wait()
        return (result, max(peak.value, status(field)))
    }
}

/// The highest figure seen by the sampling thread, and whether it goes on sampling.
private final class Peak: @unchecked Sendable {
    let lock = NSLock()
    var value = 0
    var running = true
}
