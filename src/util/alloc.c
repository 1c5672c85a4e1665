/* alloc.c - allocation wrapper with an injectable failure for tests. */
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "util/alloc.h"

/*
 * Countdown to the injected failure; 0 means no fault is armed.  A global
 * on purpose: fault injection must reach every allocation in the process.
 */
static atomic_long alloc_countdown;

static int
alloc_should_fail(void)
{
	long n = atomic_load_explicit(&alloc_countdown, memory_order_relaxed);

	if (n == 0)
		return 0;
	if (n == 1)
		return 1;	/* stays armed: every later call fails too */
	atomic_fetch_sub(&alloc_countdown, 1);
	return 0;
}

int
bt_prefault(void *p, size_t n)
{
#ifdef MADV_POPULATE_WRITE
	long page = sysconf(_SC_PAGESIZE);
	uintptr_t start, end;

	if (n < BT_PREFAULT_MIN || page <= 0)
		return 0;
	start = ((uintptr_t)p + (uintptr_t)page - 1) & ~((uintptr_t)page - 1);
	end = ((uintptr_t)p + n) & ~((uintptr_t)page - 1);
	if (end > start &&
	    madvise((void *)start, end - start, MADV_POPULATE_WRITE) != 0)
		return -errno;
	return 0;
#else
	(void)p;
	(void)n;
	return -ENOSYS;
#endif
}

void
bt_alloc_fail_after(long n)
{
	atomic_store(&alloc_countdown, n < 0 ? 0 : n);
}

void *
bt_malloc(size_t n)
{
	return alloc_should_fail() ? NULL : malloc(n ? n : 1);
}

void *
bt_calloc(size_t count, size_t size)
{
	return alloc_should_fail() ? NULL : calloc(count ? count : 1, size ? size : 1);
}

void *
bt_realloc(void *p, size_t n)
{
	return alloc_should_fail() ? NULL : realloc(p, n ? n : 1);
}

char *
bt_strdup(const char *s)
{
	return bt_memdup(s, strlen(s) + 1);
}

void *
bt_memdup(const void *p, size_t n)
{
	void *q = bt_malloc(n);

	if (q != NULL && n > 0)
		memcpy(q, p, n);
	return q;
}

void
bt_free(void *p)
{
	free(p);
}

void
bt_alloc_trim(void)
{
#ifdef __GLIBC__
	malloc_trim(0);
#endif
}
