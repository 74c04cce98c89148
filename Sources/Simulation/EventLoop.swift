import Dispatch

/// The simulation's one clock and its queue of future events, run from one thread.
///
/// Events run in order of (time, insertion number); everything that inserts events runs inside
/// an event, on the driving thread, so the insertion order (and with it the whole run) follows
/// from the seed. An event belongs to a host incarnation: it is skipped once that host crashed
/// (`Host.epoch` moved on), and held back while the host is frozen.
final class EventLoop: @unchecked Sendable {
    /// Simulated nanoseconds since the run began.
    private(set) var now: UInt64 = 0
    private var heap: [Event] = []
    private var inserted: UInt64 = 0
    /// Events run so far.
    private(set) var executed = 0
    /// A digest of every event run (kind, host, time), for replay checks.
    private(set) var trace = TraceDigest()
    /// When set, each event is printed as it runs.
    var printTrace = false
    /// Says, for a host, whether an event of incarnation `epoch` still runs, and until when it
    /// is frozen (events due before are postponed to then).
    var hostState: (Int, Int) -> (alive: Bool, frozenUntil: UInt64) = { _, _ in (true, 0) }
    /// Called after each event with its host (the checks that run after every event).
    var afterEvent: (Int) -> Void = { _ in }

    struct Event {
        var time: UInt64
        var order: UInt64
        var host: Int
        var epoch: Int
        var label: String
        var queue: DispatchQueue?
        var body: () -> Void
    }

    /// Runs `body` at `time` (never before now), on `queue` (with `queue.sync`, so code that
    /// checks it runs on its queue holds) when given.
    func at(_ time: UInt64, host: Int, epoch: Int, _ label: String, on queue: DispatchQueue?, _ body: @escaping () -> Void) {
        inserted += 1
        push(Event(time: max(time, now), order: inserted, host: host, epoch: epoch, label: label, queue: queue, body: body))
    }

    /// Runs events until none is left, `time` is reached, or `stop` says so (checked between
    /// events). Returns whether it stopped because of `stop`.
    @discardableResult
    func run(until time: UInt64, stop: () -> Bool = { false }) -> Bool {
        while let first = heap.first, first.time <= time {
            let event = pop()
            now = event.time
            let state = hostState(event.host, event.epoch)
            guard state.alive else { continue }
            if state.frozenUntil > now {
                inserted += 1
                var later = event
                later.time = state.frozenUntil
                later.order = inserted
                push(later)
                continue
            }
            executed += 1
            trace.add(now, event.host, event.label)
            if printTrace { print(TraceDigest.line(now, event.host, event.label)) }
            if let queue = event.queue { queue.sync(execute: event.body) } else { event.body() }
            afterEvent(event.host)
            if stop() { return true }
        }
        now = max(now, time)
        return false
    }

    /// Adds a line to the trace without an event (what the driver does between events).
    func note(_ host: Int, _ label: String) {
        trace.add(now, host, label)
        if printTrace { print(TraceDigest.line(now, host, label)) }
    }

    var pending: Int { heap.count }

    /// Forgets every event and hook (the end of a run: what they captured is released).
    func clear() {
        heap = []
        hostState = { _, _ in (true, 0) }
        afterEvent = { _ in }
    }

    /// Drops the events of crashed incarnations now rather than when their time comes (they
    /// hold what their closures captured until then).
    func dropDeadEvents() {
        let live = heap.filter { $0.host < 0 || hostState($0.host, $0.epoch).alive }
        heap = []
        for event in live { push(event) }
    }

    // MARK: Binary heap on (time, order)

    private static func before(_ a: Event, _ b: Event) -> Bool {
        a.time != b.time ? a.time < b.time : a.order < b.order
    }

    private func push(_ event: Event) {
        heap.append(event)
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard Self.before(heap[child], heap[parent]) else { break }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    private func pop() -> Event {
        let top = heap[0]
        let last = heap.removeLast()
        if !heap.isEmpty {
            heap[0] = last
            var parent = 0
            while true {
                let left = 2 * parent + 1, right = left + 1
                var smallest = parent
                if left < heap.count, Self.before(heap[left], heap[smallest]) { smallest = left }
                if right < heap.count, Self.before(heap[right], heap[smallest]) { smallest = right }
                if smallest == parent { break }
                heap.swapAt(parent, smallest)
                parent = smallest
            }
        }
        return top
    }
}

/// FNV-1a over every trace line: two runs of a seed are the same run when their digests agree.
struct TraceDigest: Sendable {
    private(set) var value: UInt64 = 0xcbf2_9ce4_8422_2325

    mutating func add(_ time: UInt64, _ host: Int, _ label: String) {
        mix(time)
        mix(UInt64(bitPattern: Int64(host)))
        for byte in label.utf8 { mixByte(byte) }
    }

    private mutating func mix(_ word: UInt64) {
        var w = word
        for _ in 0..<8 {
            mixByte(UInt8(truncatingIfNeeded: w))
            w >>= 8
        }
    }

    private mutating func mixByte(_ byte: UInt8) {
        value = (value ^ UInt64(byte)) &* 0x0000_0100_0000_01B3
    }

    /// "   12.345678 n2 label": seconds with microseconds, the host (`-` for the driver).
    static func line(_ time: UInt64, _ host: Int, _ label: String) -> String {
        let micros = time / 1000
        let fraction = String(micros % 1_000_000)
        let seconds = String(micros / 1_000_000)
        let padded = String(repeating: " ", count: max(0, 6 - seconds.count)) + seconds
        return padded + "." + String(repeating: "0", count: 6 - fraction.count) + fraction + " " + (host < 0 ? "-" : "n\(host)") + " " + label
    }
}
