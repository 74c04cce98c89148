#ifndef LANCHAT_MEMORY_RELEASE_H
#define LANCHAT_MEMORY_RELEASE_H

/// Hands memory that malloc holds free back to the system (glibc's malloc_trim); returns
/// whether any was. Elsewhere it does nothing and returns 0.
int lanchat_release_free_memory(void);

/// Caps how many arenas malloc keeps (glibc's M_ARENA_MAX); returns whether it took. Elsewhere
/// it does nothing and returns 0.
int lanchat_limit_malloc_arenas(int arenas);

#endif
