/*
 * env_rados_fence.c - fencing on RADOS (env.h): how a cell's master
 * makes sure a server it gave up for dead can write nothing more before
 * another opens the store, and how that server learns it was fenced.
 *
 * The holder of a store's lock is named by the lock itself: cls_lock
 * records the client (client.N), the cookie and the address that the
 * OSD saw take it.  Fencing blocklists that address in the OSD map, so
 * that every OSD refuses that client instance from the epoch on
 * (-ESHUTDOWN, "EBLOCKLISTED"), waits until this client has that epoch,
 * so that its next ops (the break, then the new server's, whose client
 * connects later) carry it and each OSD they reach applies the
 * blocklist before serving them; and only then breaks the lock, which
 * a blocklist alone leaves in place (/work/shared/recipes/ceph.md).
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "util/alloc.h"
#include "util/env.h"
#include "util/env_rados_int.h"
#include "util/error.h"

/* The lists of lockers of one object: an exclusive lock has at most
 * one, a shared lock a few; each entry is short. */
#define LOCKERS_BYTES 4096

void
env_rados_on_fenced(struct env *base, void (*cb)(void *arg), void *arg)
{
	struct rados_env *env = (struct rados_env *)base;

	assert(rados_env_is(base));
	env->fenced = cb;
	env->fenced_arg = arg;
}

int
env_rados_client(struct env *base, char *out, size_t size)
{
	struct rados_env *env = (struct rados_env *)base;
	char *addrs;
	int rc;

	if (!rados_env_is(base))
		return bt_error_set(-EINVAL, "not a RADOS env");
	if ((rc = rados_getaddrs(env->cluster, &addrs)) < 0)
		return rados_error(env, rc, env->pool, "client address");
	snprintf(out, size, "client.%" PRIu64 " at %s",
	    rados_get_instance_id(env->cluster), addrs);
	rados_buffer_free(addrs);
	return 0;
}

/* The next entry of a list of NUL-terminated strings, or NULL. */
static const char *
entry_next(const char *p, const char *end)
{
	p += strlen(p) + 1;
	return p < end ? p : NULL;
}

int
env_rados_lock_fence(struct env *base, const char *path, char *fenced,
    size_t size)
{
	struct rados_env *env = (struct rados_env *)base;
	char tag[256], clients[LOCKERS_BYTES], cookies[LOCKERS_BYTES];
	char addrs[LOCKERS_BYTES];
	size_t tag_len = sizeof(tag), clients_len = sizeof(clients);
	size_t cookies_len = sizeof(cookies), addrs_len = sizeof(addrs);
	const char *client, *cookie, *addr;
	size_t used = 0;
	int exclusive, rc;
	ssize_t n;
	char *oid;

	if (!rados_env_is(base))
		return bt_error_set(-EINVAL, "%s: fencing needs RADOS "
		    "storage", path);
	if (size > 0)
		fenced[0] = '\0';
	if ((oid = rados_oid(path)) == NULL)
		return -ENOMEM;
	n = rados_list_lockers(env->io, oid, RADOS_LOCK_NAME, &exclusive,
	    tag, &tag_len, clients, &clients_len, cookies, &cookies_len,
	    addrs, &addrs_len);
	if (n == -ENOENT || n == 0) {
		rc = 0;		/* no lock object, or nobody holds it */
		goto out;
	}
	if (n < 0) {
		rc = rados_error(env, (int)n, path, "list the lock's holders");
		goto out;
	}
	/* Every holder is blocklisted before any lock is broken. */
	addr = addrs;
	for (ssize_t i = 0; i < n && addr != NULL; i++) {
		if ((rc = rados_blocklist_add(env->cluster, (char *)addr,
		    0)) < 0) {
			rc = rados_error(env, rc, path, "blocklist the lock's "
			    "holder");
			goto out;
		}
		addr = entry_next(addr, addrs + addrs_len);
	}
	if ((rc = rados_wait_for_latest_osdmap(env->cluster)) < 0) {
		rc = rados_error(env, rc, path, "wait for the OSD map");
		goto out;
	}
	client = clients;
	cookie = cookies;
	addr = addrs;
	for (ssize_t i = 0; i < n && client != NULL && cookie != NULL &&
	    addr != NULL; i++) {
		rc = rados_break_lock(env->io, oid, RADOS_LOCK_NAME, client,
		    cookie);
		if (rc < 0 && rc != -ENOENT) {
			rc = rados_error(env, rc, path, "break the lock");
			goto out;
		}
		if (used < size)
			used += (size_t)snprintf(fenced + used, size - used,
			    "%s%s at %s (cookie %s)", i > 0 ? ", " : "",
			    client, addr, cookie);
		client = entry_next(client, clients + clients_len);
		cookie = entry_next(cookie, cookies + cookies_len);
		addr = entry_next(addr, addrs + addrs_len);
	}
	rc = (int)n;
out:
	bt_free(oid);
	return rc;
}
