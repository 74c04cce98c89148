#include "memory_release.h"
/* Any libc header defines __GLIBC__ on glibc; without one the test below never holds. */
#include <stdlib.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

/* jemalloc's control interface, bound when the process links jemalloc (the `lanchat` executable
   does, Package.swift) and null otherwise (tests, processes that embed a node): weak, so either
   links. MALLCTL_ARENAS_ALL (4096) names every arena at once. */
extern int mallctl(const char *name, void *oldp, size_t *oldlenp, void *newp, size_t newlen) __attribute__((weak));

int lanchat_release_free_memory(void) {
    if (mallctl) return mallctl("arena.4096.purge", NULL, NULL, NULL, 0) == 0;
#if defined(__GLIBC__)
    return malloc_trim(0);
#else
    return 0;
#endif
}

/* jemalloc keeps its own arenas (a few per core, each thread bound to one), and no glibc arena
   is used beside it: nothing to cap. */
int lanchat_limit_malloc_arenas(int arenas) {
    if (mallctl) return 1;
#if defined(__GLIBC__)
    return mallopt(M_ARENA_MAX, arenas);
#else
    (void)arenas;
    return 0;
#endif
}
