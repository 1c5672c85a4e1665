/* placeholder: being written */
#include <errno.h>

#include "server/server_int.h"
#include "util/error.h"

int
server_check(struct server *s,
    void (*report)(void *arg, const char *problem),
    void (*progress)(void *arg, uint64_t done, uint64_t total), void *arg,
    uint64_t *files, uint64_t *bytes)
{
	(void)s; (void)report; (void)progress; (void)arg; (void)files;
	(void)bytes;
	return bt_error_set(-ENOSYS, "check: being written");
}
