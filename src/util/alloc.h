/*
 * alloc.h - the one allocation wrapper of the library.
 *
 * Library code allocates only through these functions and turns a NULL
 * into -ENOMEM; only main() code may abort on allocation failure.  Tests
 * make the Nth allocation from now fail with bt_alloc_fail_after(), to
 * prove that every -ENOMEM path cleans up.
 */
#ifndef TABLETFS_UTIL_ALLOC_H
#define TABLETFS_UTIL_ALLOC_H

#include <stddef.h>

void *bt_malloc(size_t n);
void *bt_calloc(size_t count, size_t size);
void *bt_realloc(void *p, size_t n);
char *bt_strdup(const char *s);
void *bt_memdup(const void *p, size_t n);
void bt_free(void *p);
/*
 * Give the pages of freed memory back to the system where the C library
 * can (glibc's malloc_trim), after a large free such as a flushed
 * memtable: its small blocks, freed amid live ones, would otherwise stay
 * in the process's resident set.  Thread-safe; does nothing elsewhere.
 */
void bt_alloc_trim(void);

/*
 * Testing only: the nth allocation from now (1 = the next one) and every
 * one after it fails, until called again with n = 0, which disables the
 * fault.  Process-wide: the only mutable global in the library.
 */
void bt_alloc_fail_after(long n);

#endif
