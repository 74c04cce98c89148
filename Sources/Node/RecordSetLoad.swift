import Dispatch
import Foundation
import Store

/// The record set of a node being loaded beside its queue, so that starting takes the same time
/// whatever the store holds: a million records took half a second to read before the local API
/// could answer, while nothing asks for the set until a peer connects or a record arrives.
///
/// The set holds the records stored as arrival number `sequence` or earlier (the store's newest
/// when the node was made); the node adds every later one itself, as it stores it or picks it
/// up from another process, so the two never overlap whenever the load runs.
///
/// Whoever needs the set first takes it (`take`, on the node's queue): finished by then, it is
/// handed over; being read, the queue waits for the rest; not begun yet (a busy machine, or a
/// simulation that has not run the job), the queue reads it itself. One read in every case.
final class RecordSetLoad: @unchecked Sendable {
    private enum State {
        case waiting
        case reading
        case done(Result<RecordSet, any Error>)
        case taken
    }

    let reader: RecordKeyReader
    let sequence: Int64
    private let condition = NSCondition()
    /// Guarded by `condition`.
    private var state = State.waiting

    init(reader: RecordKeyReader, through sequence: Int64) {
        self.reader = reader
        self.sequence = sequence
    }

    /// Where loads run: beside the node's queue, at the priority of the start-up it shortens.
    static let queue = DispatchQueue(label: "lanchat.record-set", qos: .userInitiated)

    /// The job that reads the set; a no-op if `take` got to it first.
    func run() {
        condition.lock()
        guard case .waiting = state else { condition.unlock(); return }
        state = .reading
        condition.unlock()
        let result = Result { try RecordSet(reader: reader, through: sequence) }
        condition.lock()
        state = .done(result)
        condition.broadcast()
        condition.unlock()
    }

    /// The loaded set, reading it here if no job has begun; waits for a job that has. Call once.
    func take() throws -> RecordSet {
        run()  // reads the set here unless a job has begun
        condition.lock()
        while case .reading = state { condition.wait() }
        guard case let .done(result) = state else { condition.unlock(); preconditionFailure("the record set is taken once") }
        state = .taken
        condition.unlock()
        return try result.get()
    }
}
