#include "memory_release.h"
/* Any libc header defines __GLIBC__ on glibc; without one the test below never holds. */
#include <stdlib.h>

#if defined(__GLIBC__)
#include <malloc.h>
int lanchat_release_free_memory(void) { return malloc_trim(0); }
int lanchat_limit_malloc_arenas(int arenas) { return mallopt(M_ARENA_MAX, arenas); }
#else
int lanchat_release_free_memory(void) { return 0; }
int lanchat_limit_malloc_arenas(int arenas) { (void)arenas; return 0; }
#endif
