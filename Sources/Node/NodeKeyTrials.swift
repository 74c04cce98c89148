import Foundation
import Store
import Wire

/// Key records whose boxes wait for a trial (`KeyTrialQueue`, Protocol.md §9): most are tried
/// as they are stored; those beyond their author's or the node's budget are tried by a one-shot
/// timer armed for when the budgets allow the next, and the listeners of the conversations
/// they open are told, as for records just stored.
extension Node {
    /// Arms the timer for the next key record trials, unless armed or none waits.
    func armKeyTrialTimer(after delay: UInt64? = nil) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard running, keyTrialTimer == nil, store.waitingKeyRecords > 0 else { return }
        let wait = delay ?? 0
        keyTrialTimer = world.scheduler.after(.milliseconds(Int(max(1, min(wait, 60_000)))), on: queue) { [self] in
            keyTrialTimer = nil
            guard running else { return }
            let next: UInt64?
            do {
                next = try store.tryWaitingKeyRecords()
            } catch {
                log("could not try waiting key records: \(error)", level: .error)
                next = 1_000
            }
            announceOpenedKeyRecords(except: [])
            if let next { armKeyTrialTimer(after: next) }
        }
    }

    /// Tells the observers of the key records tried since last asked that opened for this
    /// node (their conversations changed), less `shown` (told already as stored records).
    func announceOpenedKeyRecords(except shown: [Record]) {
        dispatchPrecondition(condition: .onQueue(queue))
        // Nearly always none: then no set of the batch's ids is built (a sync's batches hold thousands).
        let taken = store.takeOpenedKeyRecords()
        guard !taken.isEmpty else { return }
        let told = Set(shown.map(\.id))
        notifyObservers(taken.filter { !told.contains($0.id) })
    }
}
