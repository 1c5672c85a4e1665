/* error.c - return code names and the per-thread detail message. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "util/error.h"

/* Per-thread, like errno: the only state here, and no thread shares it. */
static __thread char error_detail[512];

const char *
bt_strerror(int rc)
{
	switch (rc) {
	case BT_OK:
		return "success";
	case BT_NOTFOUND:
		return "not found";
	case BT_DONE:
		return "end of data";
	case BT_STALE:
		return "stale location";
	case BT_ECORRUPT:
		return "corrupt data";
	case BT_ECHECKSUM:
		return "checksum mismatch";
	case BT_EFORMAT:
		return "unknown file format";
	case BT_ETOOBIG:
		return "too big";
	case BT_ECLOSED:
		return "closed after an earlier failure";
	case BT_ENOTSERVING:
		return "not served here: locate it again";
	}
	if (rc < 0 && rc > -4096)
		return strerror(-rc);
	return "unknown error";
}

/* Formatted apart first: an argument may be the detail itself, which
 * wraps the error found below in one found above. */
int
bt_error_set(int rc, const char *fmt, ...)
{
	char detail[sizeof(error_detail)];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	memcpy(error_detail, detail, strlen(detail) + 1);
	return rc;
}

const char *
bt_error_detail(void)
{
	return error_detail;
}

void
bt_error_clear(void)
{
	error_detail[0] = '\0';
}
