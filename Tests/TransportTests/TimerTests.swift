import Dispatch
import Testing
import Transport

@Suite(.timeLimit(.minutes(1))) struct TimerTests {
    @Test func scheduleRunsOnceOnTheQueue() async {
        let queue = DispatchQueue(label: "schedule")
        let events = Events<Bool>()
        schedule(after: .milliseconds(10), on: queue) {
            dispatchPrecondition(condition: .onQueue(queue))
            events.send(true)
        }
        #expect(await events.next() == true)
    }

    @Test func cancelledScheduleNeverRuns() async {
        let queue = DispatchQueue(label: "schedule-cancel")
        let events = Events<String>()
        let cancelled = schedule(after: .milliseconds(20), on: queue) { events.send("cancelled one ran") }
        cancelled.cancel()
        cancelled.cancel()
        schedule(after: .milliseconds(100), on: queue) { events.send("later one ran") }
        #expect(await events.next() == "later one ran")
    }

    @Test func repeatingTimerRepeatsUntilCancelled() async {
        let queue = DispatchQueue(label: "repeating")
        let ticks = Counter()
        let events = Events<Int>()
        let timer = RepeatingTimer(interval: .milliseconds(5), queue: queue) {
            ticks.value += 1
            events.send(ticks.value)
        }
        for expected in 1...3 { #expect(await events.next() == expected) }
        let stoppedAt = onQueue(queue) { () -> Int in
            timer.cancel()
            return ticks.value
        }
        // A later one-shot on the same queue: if the repeating timer were
        // still running it would have ticked by then (interval 5 ms vs 50 ms).
        let barrier = Events<Bool>()
        schedule(after: .milliseconds(50), on: queue) { barrier.send(true) }
        _ = await barrier.next()
        onQueue(queue) { #expect(ticks.value == stoppedAt) }
    }
}
