#include <stddef.h>

/* jemalloc's control interface (jemalloc/jemalloc.h declares it too, along with malloc and free,
   which would clash with the C library's declarations in Swift). */
int mallctl(const char *name, void *oldp, size_t *oldlenp, void *newp, size_t newlen);
