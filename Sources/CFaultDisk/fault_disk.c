/* The fault-injecting disk: see fault_disk.h. */
#include "fault_disk.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* One write (or truncate) since the file's last sync, with what it replaced. */
typedef struct undo_entry {
    sqlite3_int64 offset;     /* where the write began (a truncate: the new size) */
    sqlite3_int64 length;     /* bytes written (a truncate: bytes cut off) */
    sqlite3_int64 size_before;/* the file's size before it */
    unsigned char *old;       /* the bytes it replaced that existed: min(length, size_before - offset) */
    sqlite3_int64 old_length;
    int is_truncate;
    int durable;              /* a torn write's prefix: it reached the disk */
} undo_entry;

/* A file by path, with its writes since the last sync. */
typedef struct tracked_file {
    char *path;
    int klass;
    sqlite3_int64 synced_size;
    undo_entry *entries;
    long count, capacity;
    struct tracked_file *next;
} tracked_file;

static struct {
    pthread_mutex_t lock;
    tracked_file *files;
    int kind, class_mask, sticky, fired, crashed;
    long after, passed;
    uint64_t rng;
    long ops[5][FAULT_DISK_OP_COUNT];
    long injected[FAULT_DISK_KIND_COUNT];
} disk = { .lock = PTHREAD_MUTEX_INITIALIZER };

static uint64_t next_random(uint64_t *state) {
    /* SplitMix64 */
    uint64_t z = (*state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static int class_index(int klass) {
    switch (klass) {
    case FAULT_DISK_MAIN_DB: return 0;
    case FAULT_DISK_WAL: return 1;
    case FAULT_DISK_JOURNAL: return 2;
    case FAULT_DISK_PACK: return 3;
    default: return 4;
    }
}

/* Counts an operation and returns the fault to inject into it (FAULT_DISK_NONE for none). Call
 * with the lock held. */
static int count_and_check(int klass, int op) {
    disk.ops[class_index(klass)][op]++;
    if (disk.kind == FAULT_DISK_NONE || !(disk.class_mask & klass)) return FAULT_DISK_NONE;
    int matches;
    switch (disk.kind) {
    case FAULT_DISK_READ_EIO: matches = op == FAULT_DISK_OP_READ; break;
    case FAULT_DISK_FSYNC: matches = op == FAULT_DISK_OP_SYNC; break;
    default: matches = op == FAULT_DISK_OP_WRITE; break;
    }
    if (!matches) return FAULT_DISK_NONE;
    if (disk.passed < disk.after) { disk.passed++; return FAULT_DISK_NONE; }
    int kind = disk.kind;
    disk.fired = 1;
    disk.injected[kind]++;
    if (!disk.sticky) disk.kind = FAULT_DISK_NONE;
    return kind;
}

static tracked_file *find_file(const char *path) {
    for (tracked_file *f = disk.files; f; f = f->next)
        if (strcmp(f->path, path) == 0) return f;
    return NULL;
}

static tracked_file *track(const char *path, int klass, sqlite3_int64 size) {
    tracked_file *f = find_file(path);
    if (f) return f;
    f = calloc(1, sizeof *f);
    if (!f) return NULL;
    f->path = strdup(path);
    if (!f->path) { free(f); return NULL; }
    f->klass = klass;
    f->synced_size = size;
    f->next = disk.files;
    disk.files = f;
    return f;
}

static void clear_entries(tracked_file *f) {
    for (long i = 0; i < f->count; i++) free(f->entries[i].old);
    f->count = 0;
}

static void forget(const char *path) {
    for (tracked_file **p = &disk.files; *p; p = &(*p)->next) {
        if (strcmp((*p)->path, path) == 0) {
            tracked_file *f = *p;
            *p = f->next;
            clear_entries(f);
            free(f->entries);
            free(f->path);
            free(f);
            return;
        }
    }
}

/* Reads `count` bytes at `offset` of a file being tracked; returns 0 on success. */
typedef int (*read_fn)(void *context, void *buffer, sqlite3_int64 count, sqlite3_int64 offset);

/* Remembers what a write of `length` bytes at `offset` (or a truncate to `offset`) replaces. */
static void remember(tracked_file *f, sqlite3_int64 offset, sqlite3_int64 length, sqlite3_int64 size_before,
                     int is_truncate, int durable, read_fn read, void *context) {
    if (!f) return;
    if (f->count == f->capacity) {
        long capacity = f->capacity ? f->capacity * 2 : 64;
        undo_entry *grown = realloc(f->entries, (size_t)capacity * sizeof *grown);
        if (!grown) abort();
        f->entries = grown;
        f->capacity = capacity;
    }
    undo_entry *e = &f->entries[f->count++];
    memset(e, 0, sizeof *e);
    e->offset = offset;
    e->length = length;
    e->size_before = size_before;
    e->is_truncate = is_truncate;
    e->durable = durable;
    sqlite3_int64 existing = size_before - offset;
    if (existing > length) existing = length;
    if (existing > 0) {
        e->old = malloc((size_t)existing);
        if (!e->old) abort();
        if (read(context, e->old, existing, offset) != 0) memset(e->old, 0, (size_t)existing);
        e->old_length = existing;
    }
}

/* ---------------------------------------------------------------------------------------------- */
/* The VFS. */

typedef struct fault_file {
    sqlite3_file base;
    sqlite3_file *real;
    int klass;
    char *path; /* NULL for a temporary file without a name: not tracked */
} fault_file;

static sqlite3_vfs fault_vfs;
static sqlite3_io_methods fault_io;

#define REAL_VFS ((sqlite3_vfs *)fault_vfs.pAppData)

static int real_read(void *context, void *buffer, sqlite3_int64 count, sqlite3_int64 offset) {
    sqlite3_file *real = context;
    int rc = real->pMethods->xRead(real, buffer, (int)count, offset);
    return (rc == SQLITE_OK || rc == SQLITE_IOERR_SHORT_READ) ? 0 : 1;
}

static sqlite3_int64 real_size(sqlite3_file *real) {
    sqlite3_int64 size = 0;
    if (real->pMethods->xFileSize(real, &size) != SQLITE_OK) return 0;
    return size;
}

static int fClose(sqlite3_file *file) {
    fault_file *p = (fault_file *)file;
    int rc = p->real->pMethods->xClose(p->real);
    sqlite3_free(p->path);
    p->path = NULL;
    return rc;
}

static int fRead(sqlite3_file *file, void *buffer, int amount, sqlite3_int64 offset) {
    fault_file *p = (fault_file *)file;
    pthread_mutex_lock(&disk.lock);
    int fault = count_and_check(p->klass, FAULT_DISK_OP_READ);
    pthread_mutex_unlock(&disk.lock);
    if (fault == FAULT_DISK_READ_EIO) return SQLITE_IOERR_READ;
    return p->real->pMethods->xRead(p->real, buffer, amount, offset);
}

static int fWrite(sqlite3_file *file, const void *buffer, int amount, sqlite3_int64 offset) {
    fault_file *p = (fault_file *)file;
    int rc;
    pthread_mutex_lock(&disk.lock);
    int fault = count_and_check(p->klass, FAULT_DISK_OP_WRITE);
    tracked_file *f = p->path ? find_file(p->path) : NULL;
    if (disk.crashed) {
        rc = SQLITE_IOERR_WRITE;
    } else if (fault == FAULT_DISK_FULL) {
        rc = SQLITE_FULL;
    } else if (fault == FAULT_DISK_WRITE_EIO) {
        rc = SQLITE_IOERR_WRITE;
    } else if (fault == FAULT_DISK_POWER_CUT) {
        disk.crashed = 1;
        rc = SQLITE_IOERR_WRITE;
    } else if (fault == FAULT_DISK_TORN) {
        sqlite3_int64 prefix = amount > 1 ? (sqlite3_int64)(next_random(&disk.rng) % (uint64_t)amount) : 0;
        if (amount >= 1024) prefix &= ~(sqlite3_int64)511;
        if (prefix > 0) {
            remember(f, offset, prefix, real_size(p->real), 0, 1, real_read, p->real);
            p->real->pMethods->xWrite(p->real, buffer, (int)prefix, offset);
        }
        disk.crashed = 1;
        rc = SQLITE_IOERR_WRITE;
    } else {
        remember(f, offset, amount, real_size(p->real), 0, 0, real_read, p->real);
        rc = p->real->pMethods->xWrite(p->real, buffer, amount, offset);
    }
    pthread_mutex_unlock(&disk.lock);
    return rc;
}

static int fTruncate(sqlite3_file *file, sqlite3_int64 size) {
    fault_file *p = (fault_file *)file;
    int rc;
    pthread_mutex_lock(&disk.lock);
    disk.ops[class_index(p->klass)][FAULT_DISK_OP_TRUNCATE]++;
    if (disk.crashed) {
        rc = SQLITE_IOERR_TRUNCATE;
    } else {
        sqlite3_int64 before = real_size(p->real);
        tracked_file *f = p->path ? find_file(p->path) : NULL;
        if (size < before) remember(f, size, before - size, before, 1, 0, real_read, p->real);
        rc = p->real->pMethods->xTruncate(p->real, size);
    }
    pthread_mutex_unlock(&disk.lock);
    return rc;
}

static int fSync(sqlite3_file *file, int flags) {
    fault_file *p = (fault_file *)file;
    int rc;
    pthread_mutex_lock(&disk.lock);
    int fault = count_and_check(p->klass, FAULT_DISK_OP_SYNC);
    if (disk.crashed || fault == FAULT_DISK_FSYNC) {
        rc = SQLITE_IOERR_FSYNC;
    } else {
        rc = p->real->pMethods->xSync(p->real, flags);
        tracked_file *f = p->path ? find_file(p->path) : NULL;
        if (rc == SQLITE_OK && f) {
            clear_entries(f);
            f->synced_size = real_size(p->real);
        }
    }
    pthread_mutex_unlock(&disk.lock);
    return rc;
}

static int fFileSize(sqlite3_file *file, sqlite3_int64 *size) {
    fault_file *p = (fault_file *)file;
    return p->real->pMethods->xFileSize(p->real, size);
}
static int fLock(sqlite3_file *file, int level) {
    fault_file *p = (fault_file *)file;
    return p->real->pMethods->xLock(p->real, level);
}
static int fUnlock(sqlite3_file *file, int level) {
    fault_file *p = (fault_file *)file;
    return p->real->pMethods->xUnlock(p->real, level);
}
static int fCheckReservedLock(sqlite3_file *file, int *out) {
    fault_file *p = (fault_file *)file;
    return p->real->pMethods->xCheckReservedLock(p->real, out);
}
static int fFileControl(sqlite3_file *file, int op, void *arg) {
    fault_file *p = (fault_file *)file;
    return p->real->pMethods->xFileControl(p->real, op, arg);
}
static int fSectorSize(sqlite3_file *file) {
    fault_file *p = (fault_file *)file;
    return p->real->pMethods->xSectorSize(p->real);
}
static int fDeviceCharacteristics(sqlite3_file *file) {
    fault_file *p = (fault_file *)file;
    return p->real->pMethods->xDeviceCharacteristics(p->real);
}
static int fShmMap(sqlite3_file *file, int region, int size, int extend, void volatile **out) {
    fault_file *p = (fault_file *)file;
    return p->real->pMethods->xShmMap(p->real, region, size, extend, out);
}
static int fShmLock(sqlite3_file *file, int offset, int n, int flags) {
    fault_file *p = (fault_file *)file;
    return p->real->pMethods->xShmLock(p->real, offset, n, flags);
}
static void fShmBarrier(sqlite3_file *file) {
    fault_file *p = (fault_file *)file;
    p->real->pMethods->xShmBarrier(p->real);
}
static int fShmUnmap(sqlite3_file *file, int deleteFlag) {
    fault_file *p = (fault_file *)file;
    return p->real->pMethods->xShmUnmap(p->real, deleteFlag);
}
/* No memory-mapped pages: every read goes through xRead, where read faults are injected. */
static int fFetch(sqlite3_file *file, sqlite3_int64 offset, int amount, void **out) {
    (void)file; (void)offset; (void)amount;
    *out = NULL;
    return SQLITE_OK;
}
static int fUnfetch(sqlite3_file *file, sqlite3_int64 offset, void *page) {
    (void)file; (void)offset; (void)page;
    return SQLITE_OK;
}

static int vOpen(sqlite3_vfs *vfs, const char *name, sqlite3_file *file, int flags, int *outFlags) {
    (void)vfs;
    fault_file *p = (fault_file *)file;
    memset(p, 0, sizeof *p);
    p->real = (sqlite3_file *)&p[1];
    if (flags & SQLITE_OPEN_MAIN_DB) p->klass = FAULT_DISK_MAIN_DB;
    else if (flags & SQLITE_OPEN_WAL) p->klass = FAULT_DISK_WAL;
    else if (flags & SQLITE_OPEN_MAIN_JOURNAL) p->klass = FAULT_DISK_JOURNAL;
    else p->klass = FAULT_DISK_OTHER;
    int rc = REAL_VFS->xOpen(REAL_VFS, name, p->real, flags, outFlags);
    if (rc != SQLITE_OK) {
        p->base.pMethods = NULL;
        return rc;
    }
    if (name && p->klass != FAULT_DISK_OTHER) {
        p->path = sqlite3_mprintf("%s", name);
        pthread_mutex_lock(&disk.lock);
        track(name, p->klass, real_size(p->real));
        pthread_mutex_unlock(&disk.lock);
    }
    p->base.pMethods = &fault_io;
    return SQLITE_OK;
}

static int vDelete(sqlite3_vfs *vfs, const char *name, int syncDir) {
    (void)vfs;
    pthread_mutex_lock(&disk.lock);
    if (disk.crashed) {
        pthread_mutex_unlock(&disk.lock);
        return SQLITE_IOERR_DELETE;
    }
    forget(name);
    pthread_mutex_unlock(&disk.lock);
    return REAL_VFS->xDelete(REAL_VFS, name, syncDir);
}
static int vAccess(sqlite3_vfs *vfs, const char *name, int flags, int *out) {
    (void)vfs;
    return REAL_VFS->xAccess(REAL_VFS, name, flags, out);
}
static int vFullPathname(sqlite3_vfs *vfs, const char *name, int size, char *out) {
    (void)vfs;
    return REAL_VFS->xFullPathname(REAL_VFS, name, size, out);
}
static void *vDlOpen(sqlite3_vfs *vfs, const char *name) { (void)vfs; return REAL_VFS->xDlOpen(REAL_VFS, name); }
static void vDlError(sqlite3_vfs *vfs, int n, char *out) { (void)vfs; REAL_VFS->xDlError(REAL_VFS, n, out); }
static void (*vDlSym(sqlite3_vfs *vfs, void *handle, const char *symbol))(void) {
    (void)vfs;
    return REAL_VFS->xDlSym(REAL_VFS, handle, symbol);
}
static void vDlClose(sqlite3_vfs *vfs, void *handle) { (void)vfs; REAL_VFS->xDlClose(REAL_VFS, handle); }
static int vRandomness(sqlite3_vfs *vfs, int n, char *out) { (void)vfs; return REAL_VFS->xRandomness(REAL_VFS, n, out); }
static int vSleep(sqlite3_vfs *vfs, int micros) { (void)vfs; return REAL_VFS->xSleep(REAL_VFS, micros); }
static int vCurrentTime(sqlite3_vfs *vfs, double *out) { (void)vfs; return REAL_VFS->xCurrentTime(REAL_VFS, out); }
static int vGetLastError(sqlite3_vfs *vfs, int n, char *out) { (void)vfs; return REAL_VFS->xGetLastError(REAL_VFS, n, out); }
static int vCurrentTimeInt64(sqlite3_vfs *vfs, sqlite3_int64 *out) {
    (void)vfs;
    return REAL_VFS->xCurrentTimeInt64(REAL_VFS, out);
}

int fault_disk_register(const char *name) {
    pthread_mutex_lock(&disk.lock);
    if (fault_vfs.zName) {
        pthread_mutex_unlock(&disk.lock);
        return SQLITE_OK;
    }
    sqlite3_vfs *real = sqlite3_vfs_find(NULL);
    if (!real) { pthread_mutex_unlock(&disk.lock); return SQLITE_ERROR; }
    fault_io = (sqlite3_io_methods){
        .iVersion = 3,
        .xClose = fClose, .xRead = fRead, .xWrite = fWrite, .xTruncate = fTruncate, .xSync = fSync,
        .xFileSize = fFileSize, .xLock = fLock, .xUnlock = fUnlock, .xCheckReservedLock = fCheckReservedLock,
        .xFileControl = fFileControl, .xSectorSize = fSectorSize, .xDeviceCharacteristics = fDeviceCharacteristics,
        .xShmMap = fShmMap, .xShmLock = fShmLock, .xShmBarrier = fShmBarrier, .xShmUnmap = fShmUnmap,
        .xFetch = fFetch, .xUnfetch = fUnfetch,
    };
    char *copy = strdup(name);
    if (!copy) { pthread_mutex_unlock(&disk.lock); return SQLITE_NOMEM; }
    fault_vfs = (sqlite3_vfs){
        .iVersion = 2,
        .szOsFile = (int)sizeof(fault_file) + real->szOsFile,
        .mxPathname = real->mxPathname,
        .zName = copy,
        .pAppData = real,
        .xOpen = vOpen, .xDelete = vDelete, .xAccess = vAccess, .xFullPathname = vFullPathname,
        .xDlOpen = vDlOpen, .xDlError = vDlError, .xDlSym = vDlSym, .xDlClose = vDlClose,
        .xRandomness = vRandomness, .xSleep = vSleep, .xCurrentTime = vCurrentTime,
        .xGetLastError = vGetLastError, .xCurrentTimeInt64 = vCurrentTimeInt64,
    };
    pthread_mutex_unlock(&disk.lock);
    return sqlite3_vfs_register(&fault_vfs, 0);
}

/* ---------------------------------------------------------------------------------------------- */
/* Control. */

void fault_disk_arm(int kind, int class_mask, long after, int sticky, uint64_t seed) {
    pthread_mutex_lock(&disk.lock);
    disk.kind = kind;
    disk.class_mask = class_mask;
    disk.after = after;
    disk.passed = 0;
    disk.sticky = sticky;
    disk.fired = 0;
    disk.rng = seed;
    pthread_mutex_unlock(&disk.lock);
}

void fault_disk_disarm(void) {
    pthread_mutex_lock(&disk.lock);
    disk.kind = FAULT_DISK_NONE;
    pthread_mutex_unlock(&disk.lock);
}

int fault_disk_fired(void) {
    pthread_mutex_lock(&disk.lock);
    int fired = disk.fired;
    pthread_mutex_unlock(&disk.lock);
    return fired;
}

void fault_disk_crash(void) {
    pthread_mutex_lock(&disk.lock);
    disk.crashed = 1;
    pthread_mutex_unlock(&disk.lock);
}

int fault_disk_is_crashed(void) {
    pthread_mutex_lock(&disk.lock);
    int crashed = disk.crashed;
    pthread_mutex_unlock(&disk.lock);
    return crashed;
}

static void write_all(int fd, const unsigned char *bytes, sqlite3_int64 count, sqlite3_int64 offset) {
    while (count > 0) {
        ssize_t n = pwrite(fd, bytes, (size_t)count, (off_t)offset);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return;
        bytes += n; count -= n; offset += n;
    }
}

static void write_zeros(int fd, sqlite3_int64 count, sqlite3_int64 offset) {
    static const unsigned char zeros[4096];
    while (count > 0) {
        sqlite3_int64 n = count < (sqlite3_int64)sizeof zeros ? count : (sqlite3_int64)sizeof zeros;
        write_all(fd, zeros, n, offset);
        count -= n; offset += n;
    }
}

/* Undoes the part [from, entry end) of a write: the bytes it replaced, zeros where it grew the file. */
static void undo_range(int fd, const undo_entry *e, sqlite3_int64 from) {
    sqlite3_int64 end = e->offset + e->length;
    sqlite3_int64 old_end = e->offset + e->old_length;
    if (from < old_end) write_all(fd, e->old + (from - e->offset), old_end - from, from);
    sqlite3_int64 zero_from = from > old_end ? from : old_end;
    if (zero_from < end) write_zeros(fd, end - zero_from, zero_from);
}

long fault_disk_power_cut(uint64_t seed, int keep_percent) {
    pthread_mutex_lock(&disk.lock);
    uint64_t rng = seed;
    long undone = 0;
    for (tracked_file *f = disk.files; f; f = f->next) {
        if (f->count == 0) continue;
        /* Which writes survive, and how much of each: decided oldest first, so the size follows. */
        sqlite3_int64 *kept = calloc((size_t)f->count, sizeof *kept);
        if (!kept) abort();
        sqlite3_int64 size = f->synced_size;
        for (long i = 0; i < f->count; i++) {
            undo_entry *e = &f->entries[i];
            int keep = e->durable || (keep_percent > 0 && (int)(next_random(&rng) % 100) < keep_percent);
            if (!keep) { kept[i] = 0; continue; }
            kept[i] = e->length;
            if (!e->is_truncate && !e->durable && e->length >= 1024 && next_random(&rng) % 4 == 0)
                kept[i] = (sqlite3_int64)(next_random(&rng) % (uint64_t)(e->length / 512)) * 512;
            if (e->is_truncate) size = e->offset;
            else if (kept[i] > 0 && e->offset + kept[i] > size) size = e->offset + kept[i];
        }
        int fd = open(f->path, O_RDWR | O_CLOEXEC);
        if (fd >= 0) {
            /* Newest first, so each undo sees the bytes its write found. */
            for (long i = f->count - 1; i >= 0; i--) {
                undo_entry *e = &f->entries[i];
                if (e->is_truncate) {
                    if (kept[i] == 0) { write_all(fd, e->old, e->old_length, e->offset); undone++; }
                } else if (kept[i] < e->length) {
                    undo_range(fd, e, e->offset + kept[i]);
                    undone++;
                }
            }
            if (ftruncate(fd, (off_t)size) != 0) { /* best effort */ }
            fsync(fd);
            close(fd);
        }
        free(kept);
        clear_entries(f);
        f->synced_size = size;
    }
    disk.crashed = 0;
    disk.kind = FAULT_DISK_NONE;
    pthread_mutex_unlock(&disk.lock);
    return undone;
}

void fault_disk_reset(void) {
    pthread_mutex_lock(&disk.lock);
    while (disk.files) {
        tracked_file *f = disk.files;
        disk.files = f->next;
        clear_entries(f);
        free(f->entries);
        free(f->path);
        free(f);
    }
    disk.kind = FAULT_DISK_NONE;
    disk.crashed = 0;
    disk.fired = 0;
    memset(disk.ops, 0, sizeof disk.ops);
    memset(disk.injected, 0, sizeof disk.injected);
    pthread_mutex_unlock(&disk.lock);
}

long fault_disk_operations(int class_index_, int op) {
    if (class_index_ < 0 || class_index_ >= 5 || op < 0 || op >= FAULT_DISK_OP_COUNT) return 0;
    pthread_mutex_lock(&disk.lock);
    long n = disk.ops[class_index_][op];
    pthread_mutex_unlock(&disk.lock);
    return n;
}

long fault_disk_injected(int kind) {
    if (kind < 0 || kind >= FAULT_DISK_KIND_COUNT) return 0;
    pthread_mutex_lock(&disk.lock);
    long n = disk.injected[kind];
    pthread_mutex_unlock(&disk.lock);
    return n;
}

/* ---------------------------------------------------------------------------------------------- */
/* The chunk pack's system calls. */

static int fd_read(void *context, void *buffer, sqlite3_int64 count, sqlite3_int64 offset) {
    int fd = *(int *)context;
    memset(buffer, 0, (size_t)count);
    unsigned char *bytes = buffer;
    while (count > 0) {
        ssize_t n = pread(fd, bytes, (size_t)count, (off_t)offset);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        bytes += n; count -= n; offset += n;
    }
    return 0;
}

static sqlite3_int64 fd_size(int fd) {
    struct stat status;
    return fstat(fd, &status) == 0 ? (sqlite3_int64)status.st_size : 0;
}

ssize_t fault_disk_pwrite(const char *path, int fd, const void *bytes, size_t count, off_t offset) {
    pthread_mutex_lock(&disk.lock);
    int fault = count_and_check(FAULT_DISK_PACK, FAULT_DISK_OP_WRITE);
    tracked_file *f = track(path, FAULT_DISK_PACK, fd_size(fd));
    ssize_t result;
    int saved = 0;
    if (disk.crashed || fault == FAULT_DISK_WRITE_EIO) {
        result = -1; saved = EIO;
    } else if (fault == FAULT_DISK_FULL) {
        result = -1; saved = ENOSPC;
    } else if (fault == FAULT_DISK_POWER_CUT) {
        disk.crashed = 1;
        result = -1; saved = EIO;
    } else if (fault == FAULT_DISK_TORN) {
        size_t prefix = count > 1 ? (size_t)(next_random(&disk.rng) % count) : 0;
        if (count >= 1024) prefix &= ~(size_t)511;
        if (prefix > 0) {
            remember(f, offset, (sqlite3_int64)prefix, fd_size(fd), 0, 1, fd_read, &fd);
            write_all(fd, bytes, (sqlite3_int64)prefix, offset);
        }
        disk.crashed = 1;
        result = -1; saved = EIO;
    } else {
        remember(f, offset, (sqlite3_int64)count, fd_size(fd), 0, 0, fd_read, &fd);
        result = pwrite(fd, bytes, count, offset);
        saved = errno;
    }
    pthread_mutex_unlock(&disk.lock);
    errno = saved;
    return result;
}

int fault_disk_fdatasync(const char *path, int fd) {
    pthread_mutex_lock(&disk.lock);
    int fault = count_and_check(FAULT_DISK_PACK, FAULT_DISK_OP_SYNC);
    int result, saved = 0;
    if (disk.crashed || fault == FAULT_DISK_FSYNC) {
        result = -1; saved = EIO;
    } else {
        result = fdatasync(fd);
        saved = errno;
        tracked_file *f = track(path, FAULT_DISK_PACK, fd_size(fd));
        if (result == 0 && f) {
            clear_entries(f);
            f->synced_size = fd_size(fd);
        }
    }
    pthread_mutex_unlock(&disk.lock);
    errno = saved;
    return result;
}

int fault_disk_check_read(const char *path, int fd, off_t offset, size_t count) {
    (void)path; (void)fd; (void)offset; (void)count;
    pthread_mutex_lock(&disk.lock);
    int fault = count_and_check(FAULT_DISK_PACK, FAULT_DISK_OP_READ);
    pthread_mutex_unlock(&disk.lock);
    return fault == FAULT_DISK_READ_EIO ? EIO : 0;
}
