#include "memory_release.h"

#if defined(__GLIBC__)
#include <malloc.h>
int lanchat_release_free_memory(void) { return malloc_trim(0); }
#else
int lanchat_release_free_memory(void) { return 0; }
#endif
