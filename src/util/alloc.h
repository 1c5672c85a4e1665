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
 * Make the whole pages within [p, p + n) of memory just allocated
 * resident and writable now, with one call (madvise MADV_POPULATE_WRITE,
 * Linux 5.14), where the writes that are about to fill it would fault once
 * for each page they first touch: a fault costs more than a page's share
 * of the call, most of all in a virtual machine.  For fresh memory that
 * will be filled whole, such as a memtable's arena block (memory the heap
 * has just grown by, or taken back after a flushed memtable was freed);
 * on memory already resident the call is wasted.  Below BT_PREFAULT_MIN
 * bytes it does nothing, the call costing more than the faults it would
 * save.  Best effort: where the call fails the writes fault page by
 * page, as they would without it.
 * Returns 0, or the call's -errno (-ENOSYS where the kernel headers lack
 * it), so that a caller can stop asking.
 */
#define BT_PREFAULT_MIN		(16u << 10)
int bt_prefault(void *p, size_t n);

/*
 * Testing only: the nth allocation from now (1 = the next one) and every
 * one after it fails, until called again with n = 0, which disables the
 * fault.  Process-wide: the only mutable global in the library.
 */
void bt_alloc_fail_after(long n);

#endif
