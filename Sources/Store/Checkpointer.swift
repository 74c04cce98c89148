import Dispatch
import SQLite

/// Runs the WAL checkpoints that a connection's commits call for, on a queue and connection of
/// their own (used by `ChunkWriter`, and by `Store.checkpointInBackground` for a running node).
///
/// Why: SQLite checkpoints inside the commit that crosses its threshold, so the committing
/// thread copies some 4 MB into the database and waits for two fsyncs. A 20 MiB fetch crossed it
/// five times and stalled on it for most of its time. Here the commit only notes the WAL's
/// size, and every `framesPerCheckpoint` pages of growth a passive checkpoint runs elsewhere: the
/// same copying and syncing, beside the writer. Durability does not change: committed
/// transactions are in the WAL, which recovery replays after a crash.
final class BackgroundCheckpointer: @unchecked Sendable {
    /// WAL growth, in frames (pages), between checkpoints.
    let framesPerCheckpoint: Int

    private let queue = DispatchQueue(label: "lanchat.store.checkpoint", qos: .utility)
    /// Used on `queue` only.
    private let connection: Connection
    /// The WAL's size when a checkpoint last ran. Used on `queue` only.
    private var checkpointedAt = 0

    /// Takes over the checkpoints of `writer`, a connection to the file at `path`: its commits
    /// now only report the WAL's size here (`committed`). The writer keeps this checkpointer
    /// alive through its hook. A checkpoint runs every `bytesPerCheckpoint` of WAL growth, by
    /// default 4 MiB: SQLite's own threshold (1,000 pages) for 4 KiB pages, and the same bytes
    /// for a file of larger pages, so that the WAL a busy writer leaves behind stays as small.
    init(for writer: Connection, path: String, bytesPerCheckpoint: Int = 4 << 20) throws(SQLiteError) {
        connection = try Connection(path: path, vfs: writer.vfs)
        let pageSize = Int(try writer.scalarInt("PRAGMA page_size") ?? 4096)
        framesPerCheckpoint = max(1, bytesPerCheckpoint / max(pageSize, 512))
        writer.setWALHook { [self] frames in committed(walFrames: frames) }
    }

    /// After a commit, with the frames now in the WAL: a checkpoint runs every
    /// `framesPerCheckpoint` frames of growth. A WAL that shrank was restarted (a checkpoint
    /// caught up), so counting starts again. Call from any thread.
    func committed(walFrames: Int) {
        queue.async { [self] in
            if walFrames < checkpointedAt { checkpointedAt = 0 }
            guard walFrames >= checkpointedAt + framesPerCheckpoint else { return }
            checkpointedAt = walFrames
            _ = try? connection.checkpointPassive()
        }
    }

    /// Returns once the checkpoints asked for so far have run (for tests).
    func drain() {
        queue.sync {}
    }
}
