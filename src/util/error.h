/*
 * error.h - return codes shared by every layer, and the detail message.
 *
 * Functions return int: 0 for success, a positive code for an expected
 * outcome (BT_NOTFOUND, BT_DONE), a negative code for an error: -errno for
 * system failures, or one of the BT_E* codes below, which sit far below any
 * errno value.  bt_strerror() names both kinds.
 *
 * Where an error is found, the finder records one line of context with
 * bt_error_set() ("sst 17: block checksum mismatch at 4096"); callers above
 * only pass the code on.  The detail is per thread, like errno.
 */
#ifndef TABLETFS_UTIL_ERROR_H
#define TABLETFS_UTIL_ERROR_H

enum {
	BT_OK = 0,
	BT_NOTFOUND = 1,	/* the key or name does not exist */
	BT_DONE = 2,		/* an iterator or reader reached its end */
	BT_STALE = 3,		/* a location looked up or cached no longer
				   holds: look it up again from the root */

	BT_ECORRUPT = -10000,	/* bytes on disk do not decode */
	BT_ECHECKSUM = -10001,	/* a stored CRC32C does not match */
	BT_EFORMAT = -10002,	/* unknown magic number or format version */
	BT_ETOOBIG = -10003,	/* a key or value exceeds its limit */
	BT_ECLOSED = -10004,	/* the object was closed or poisoned by an
				   earlier failure and accepts no more work */
};

/* A static description of rc: strerror(-rc) for errno codes. */
const char *bt_strerror(int rc);

/*
 * Record a one-line detail for the calling thread and return rc, so that a
 * finder can write `return bt_error_set(BT_ECHECKSUM, "...", ...);`.
 */
int bt_error_set(int rc, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* The calling thread's last detail, or "" when none was set. */
const char *bt_error_detail(void);

/* Forget the calling thread's detail. */
void bt_error_clear(void);

#endif
