/*
 * tabletd_cell.c - what both roles of tabletd read of their cell (its
 * storage and secret), and their pauses (tabletd.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "coord/coord.h"
#include "rpc/rpc.h"
#include "tabletd/tabletd.h"
#include "util/env.h"
#include "util/error.h"
#include "util/storage.h"

int
tabletd_cell_read(struct coord *c, const char *cell, char *storage,
    size_t size, struct storage *st, uint8_t secret[RPC_SECRET_SIZE])
{
	struct env *env;
	int rc;

	if ((rc = coord_cell_storage(c, storage, size)) < 0 ||
	    (rc = storage_parse(storage, st)) < 0) {
		tabletd_log("%s", *bt_error_detail() ? bt_error_detail() :
		    bt_strerror(rc));
		return rc;
	}
	if ((rc = storage_env_new(st, &env)) < 0) {
		tabletd_log("%s", *bt_error_detail() ? bt_error_detail() :
		    bt_strerror(rc));
		return rc;
	}
	rc = rpc_secret_read(env, st->path, secret);
	env_free(env);
	if (rc == -ENOENT)
		tabletd_log("%s; a cell made before secrets has none: "
		    "tabletctl -s %s init --secret makes it", bt_error_detail(),
		    cell);
	else if (rc < 0)
		tabletd_log("%s", *bt_error_detail() ? bt_error_detail() :
		    bt_strerror(rc));
	return rc;
}

void
tabletd_pause_ms(int ms)
{
	struct timespec t = { ms / 1000, (long)(ms % 1000) * 1000000 };

	nanosleep(&t, NULL);
}

void
tabletd_server_dir(const char *address, uint64_t epoch, char *dir,
    size_t size)
{
	int n = snprintf(dir, size, TABLETD_SERVERS_DIR "/%s.%" PRIu64,
	    address, epoch);

	for (char *p = dir + sizeof(TABLETD_SERVERS_DIR); n > 0 && *p != '\0';
	    p++)
		if (*p == ':')
			*p = '_';
}
