#include "memory_release.h"
/* Any libc header defines __GLIBC__ on glibc; without one the test below never holds. */
#include <stdlib.h>

#if defined(__GLIBC__)
#include <malloc.h>
int lanchat_release_free_memory(void) { return malloc_trim(0); }
#else
int lanchat_release_free_memory(void) { return 0; }
#endif
