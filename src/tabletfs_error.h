/*
 * tabletfs_error.h - the return codes of every tabletfs function, public
 * and internal, and the two calls that explain them.  Installed beside
 * tabletfs.h, which includes it; inside the tree every layer includes it
 * through util/error.h, and it sits at the top of src/ because it belongs
 * to no one layer.
 *
 * Functions return int: 0 for success, a positive code for an expected
 * outcome (BT_NOTFOUND, BT_DONE), a negative code for an error: -errno for
 * system failures, or one of the BT_E* codes below, which sit far below any
 * errno value.  bt_strerror() names both kinds.  The detail is one line of
 * context recorded where an error was found, per thread, like errno.
 */
#ifndef TABLETFS_ERROR_H
#define TABLETFS_ERROR_H

#ifdef __cplusplus
extern "C" {
#endif

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
	BT_ENOTSERVING = -10005, /* a cell's server does not serve what a
				   request names: locate it again */
};

/* A static description of rc: strerror(-rc) for errno codes. */
const char *bt_strerror(int rc);

/* The calling thread's last detail, or "" when none was set. */
const char *bt_error_detail(void);

#ifdef __cplusplus
}
#endif

#endif
