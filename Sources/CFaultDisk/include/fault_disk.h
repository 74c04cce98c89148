#ifndef LANCHAT_FAULT_DISK_H
#define LANCHAT_FAULT_DISK_H

/* A disk that fails on purpose, for tests: an SQLite VFS that wraps the default one, and the same
 * faults for the chunk pack's system calls. One disk per process (global state under a mutex,
 * since SQLite calls it from the writer's and the checkpointer's threads).
 *
 * Faults: a write that finds the disk full (SQLITE_FULL / ENOSPC), an I/O error on write or read
 * (SQLITE_IOERR_WRITE, _READ / EIO), a failed fsync (SQLITE_IOERR_FSYNC / EIO, nothing synced), and
 * a torn write (a prefix of the bytes reaches the disk, then the disk is gone: every later write
 * and sync fails as if the machine had lost power mid-write).
 *
 * Power cut: every write since the last successful sync of its file is remembered (the bytes it
 * replaced). `fault_disk_power_cut` puts each file back to what was synced, optionally keeping a
 * random subset of the unsynced writes (a disk reorders what it has not been told to flush), some
 * of them torn at a 512-byte boundary. Creating and deleting files counts as durable at once. */

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Kinds of fault. */
enum {
    FAULT_DISK_NONE = 0,
    FAULT_DISK_FULL = 1,       /* a write: disk full */
    FAULT_DISK_WRITE_EIO = 2,  /* a write: I/O error, nothing written */
    FAULT_DISK_READ_EIO = 3,   /* a read: I/O error */
    FAULT_DISK_FSYNC = 4,      /* a sync: fails, nothing synced */
    FAULT_DISK_TORN = 5,       /* a write: a prefix lands, then the disk is gone */
    FAULT_DISK_POWER_CUT = 6,  /* a write: the power goes before it, the disk is gone */
    FAULT_DISK_KIND_COUNT = 7
};

/* Classes of file, as a mask. */
enum {
    FAULT_DISK_MAIN_DB = 1,
    FAULT_DISK_WAL = 2,
    FAULT_DISK_JOURNAL = 4,
    FAULT_DISK_PACK = 8,
    FAULT_DISK_OTHER = 16,
    FAULT_DISK_ANY = 31
};

/* Operations counted per class. */
enum { FAULT_DISK_OP_READ = 0, FAULT_DISK_OP_WRITE = 1, FAULT_DISK_OP_SYNC = 2, FAULT_DISK_OP_TRUNCATE = 3, FAULT_DISK_OP_COUNT = 4 };

/* Registers the VFS under `name` (not as the default). Returns an SQLite result code; registering
 * the same name again is a no-op. */
int fault_disk_register(const char *name);

/* Arms one fault: `kind` on files of the classes in `class_mask`, after `after` matching operations
 * have gone through; once, or on every matching operation from then on (`sticky`). `seed` drives
 * the torn write's length. Replaces any armed fault. */
void fault_disk_arm(int kind, int class_mask, long after, int sticky, uint64_t seed);
/* Disarms the fault: the disk works again (unless it is gone after a torn write or a crash). */
void fault_disk_disarm(void);
/* Whether the armed fault has fired since it was armed. */
int fault_disk_fired(void);

/* The machine stops: from now on every write, truncate, sync and delete fails and changes nothing,
 * so closing connections cannot checkpoint or clean up. */
void fault_disk_crash(void);
/* Whether the disk is gone (after `fault_disk_crash` or a torn write). */
int fault_disk_is_crashed(void);
/* Power comes back: every tracked file is put back to its synced image, except that each unsynced
 * write is kept with probability `keep_percent`/100 (and then, one time in four, torn at a 512-byte
 * boundary). Call with every connection and pack closed. Clears the crash and the armed fault.
 * Returns the number of unsynced writes undone. */
long fault_disk_power_cut(uint64_t seed, int keep_percent);

/* Forgets every tracked file and zeroes the counters (a new test). */
void fault_disk_reset(void);

/* Counters since the last reset. */
long fault_disk_operations(int class_index, int op);
long fault_disk_injected(int kind);

/* The chunk pack's system calls through the disk. Each returns what the system call returns, with
 * errno set on failure. `path` names the file for power cuts; the fd is the caller's. */
ssize_t fault_disk_pwrite(const char *path, int fd, const void *bytes, size_t count, off_t offset);
int fault_disk_fdatasync(const char *path, int fd);
/* Before reading `count` bytes at `offset` (the pack reads through a memory map): 0, or an errno. */
int fault_disk_check_read(const char *path, int fd, off_t offset, size_t count);

#endif
