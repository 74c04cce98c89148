internal import CSQLite

/// Holds a connection's WAL hook for the C callback, which gets it back as its context pointer.
final class WALHookBox {
    let hook: (Int) -> Void
    init(_ hook: @escaping (Int) -> Void) { self.hook = hook }
}

private let walHookTrampoline: @convention(c) (UnsafeMutableRawPointer?, OpaquePointer?, UnsafePointer<CChar>?, Int32) -> Int32 = {
    context, _, _, frames in
    if let context { Unmanaged<WALHookBox>.fromOpaque(context).takeUnretainedValue().hook(Int(frames)) }
    return SQLITE_OK
}

extension Connection {
    /// Calls `hook` after each commit in WAL mode, on this connection's thread, with the number
    /// of frames now in the WAL. It replaces the automatic checkpoints SQLite would run inside
    /// that commit, so the owner decides where checkpoints run (`nil` restores them).
    /// https://sqlite.org/c3ref/wal_hook.html
    public func setWALHook(_ hook: ((Int) -> Void)?) {
        guard let hook else {
            walHook = nil
            sqlite3_wal_autocheckpoint(handle, 1000)
            return
        }
        let box = WALHookBox(hook)
        walHook = box
        sqlite3_wal_hook(handle, walHookTrampoline, Unmanaged.passUnretained(box).toOpaque())
    }

    /// Runs a passive checkpoint: copies to the database what WAL frames it can without waiting
    /// for or blocking readers and writers of other connections, and syncs as `synchronous`
    /// says. Returns the frames in the WAL and those checkpointed.
    /// https://sqlite.org/c3ref/wal_checkpoint_v2.html
    @discardableResult
    public func checkpointPassive() throws(SQLiteError) -> (walFrames: Int, checkpointed: Int) {
        var log: Int32 = 0
        var done: Int32 = 0
        try SQLiteError.check(sqlite3_wal_checkpoint_v2(handle, nil, SQLITE_CHECKPOINT_PASSIVE, &log, &done), handle)
        return (Int(log), Int(done))
    }
}
