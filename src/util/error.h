/*
 * error.h - return codes shared by every layer (tabletfs_error.h), and
 * the recording of their detail.
 *
 * Where an error is found, the finder records one line of context with
 * bt_error_set() ("sst 17: block checksum mismatch at 4096"); callers above
 * only pass the code on.  The detail is per thread, like errno.
 */
#ifndef TABLETFS_UTIL_ERROR_H
#define TABLETFS_UTIL_ERROR_H

#include "tabletfs_error.h"

/*
 * Record a one-line detail for the calling thread and return rc, so that a
 * finder can write `return bt_error_set(BT_ECHECKSUM, "...", ...);`.  An
 * argument may be bt_error_detail() itself, to wrap the detail below.
 */
int bt_error_set(int rc, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Forget the calling thread's detail. */
void bt_error_clear(void);

#endif
