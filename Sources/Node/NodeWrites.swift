import Dispatch
import Crypto
import Store
import Wire

/// Local writes through the running node, and observers of every record that arrives.
extension Node {
    /// Runs `body` (a write on the store with the node's identity) on the node's queue, then
    /// pushes the new records at once, by session and by datagram. The write is durable when
    /// this returns.
    @discardableResult
    public func write<T>(_ body: (Store, PrivateKey) throws -> T) throws -> T {
        try queue.sync {
            let result = try body(store, identity)
            pickUpLocalWrites()
            return result
        }
    }

    /// Reads the store on the node's queue.
    public func read<T>(_ body: (Store) throws -> T) rethrows -> T {
        try queue.sync { try body(store) }
    }

    /// Calls `observer` on the node's queue with every batch of records newly stored, whether
    /// written locally or received from a peer. Returns a token for `removeObserver`.
    @discardableResult
    public func addObserver(_ observer: @escaping ([Record]) -> Void) -> Int {
        queue.sync {
            nextObserverID += 1
            observers[nextObserverID] = observer
            return nextObserverID
        }
    }

    public func removeObserver(_ token: Int) {
        world.scheduler.async(on: queue) { [self] in observers.removeValue(forKey: token) }
    }

    func notifyObservers(_ records: [Record]) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard !records.isEmpty else { return }
        for observer in observers.values { observer(records) }
    }
}

/// Access for code that already runs on the node's queue (the local API's connections share it).
extension Node {
    /// The store and identity, for callers on the node's queue.
    public func withStoreOnQueue<T>(_ body: (Store, PrivateKey) throws -> T) rethrows -> T {
        dispatchPrecondition(condition: .onQueue(queue))
        return try body(store, identity)
    }

    /// After a local write made on the node's queue: push its records and tell the observers.
    public func localWritesDone() {
        dispatchPrecondition(condition: .onQueue(queue))
        pickUpLocalWrites()
    }
}
