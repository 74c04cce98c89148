#ifndef LANCHAT_MEMORY_RELEASE_H
#define LANCHAT_MEMORY_RELEASE_H

/// Hands memory that malloc holds free back to the system (jemalloc: a purge of every arena,
/// then returns whether it ran; glibc: malloc_trim, then returns whether any was). Elsewhere it
/// does nothing and returns 0.
int lanchat_release_free_memory(void);

/// Caps how many arenas malloc keeps (glibc's M_ARENA_MAX); returns whether it took (always
/// under jemalloc, which keeps its own). Elsewhere it does nothing and returns 0.
int lanchat_limit_malloc_arenas(int arenas);

#endif
