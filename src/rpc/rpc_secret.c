/*
 * rpc_secret.c - the cell's secret in its storage (rpc.h): made once by
 * tabletctl init, read by every process of the cell when it starts.
 * Through the env, so that it lives wherever the cell's store does.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "rpc/rpc.h"
#include "rpc/rpc_int.h"
#include "util/alloc.h"
#include "util/error.h"

/* DIR/secret, as a new string (bt_free), or NULL when memory runs out. */
static char *
secret_path(const char *dir)
{
	size_t n = strlen(dir) + sizeof(RPC_SECRET_FILE) + 1;
	char *path;

	if ((path = bt_malloc(n)) != NULL)
		snprintf(path, n, "%s/%s", dir, RPC_SECRET_FILE);
	return path;
}

int
rpc_secret_create(struct env *env, const char *dir)
{
	uint8_t secret[RPC_SECRET_SIZE];
	struct env_file *f;
	char *path;
	int rc;

	if ((path = secret_path(dir)) == NULL)
		return -ENOMEM;
	if ((rc = rpc_auth_random(secret, sizeof(secret))) < 0)
		goto out;
	if ((rc = env_file_open(env, path, ENV_CREATE_PRIVATE, &f)) < 0) {
		if (rc == -EEXIST)
			bt_error_set(rc, "%s exists already", path);
		goto out;
	}
	if ((rc = env_file_append(f, secret, sizeof(secret))) < 0 ||
	    (rc = env_file_sync(f)) < 0) {
		env_file_close(f);
		goto out_remove;
	}
	if ((rc = env_file_close(f)) < 0)
		goto out_remove;
	if ((rc = env_dir_sync(env, dir)) < 0)
		goto out_remove;
	goto out;
out_remove:
	(void)env_path_remove(env, path);
out:
	explicit_bzero(secret, sizeof(secret));
	bt_free(path);
	return rc;
}

int
rpc_secret_read(struct env *env, const char *dir,
    uint8_t secret[RPC_SECRET_SIZE])
{
	struct env_file *f;
	uint64_t size = 0;
	size_t got = 0;
	char *path;
	int rc;

	if ((path = secret_path(dir)) == NULL)
		return -ENOMEM;
	if ((rc = env_file_open(env, path, ENV_READ, &f)) < 0)
		goto out;
	if ((rc = env_file_size(f, &size)) == 0 && size == RPC_SECRET_SIZE)
		rc = env_file_read_at(f, 0, secret, RPC_SECRET_SIZE, &got);
	env_file_close(f);
	if (rc == 0 && (size != RPC_SECRET_SIZE || got != RPC_SECRET_SIZE)) {
		explicit_bzero(secret, RPC_SECRET_SIZE);
		rc = bt_error_set(BT_ECORRUPT, "cannot read the cell's secret "
		    "at %s: it is %llu bytes, not %d (remove it and make "
		    "another: tabletctl init --secret)", path,
		    (unsigned long long)size, RPC_SECRET_SIZE);
		goto out_free;
	}
out:
	if (rc < 0 && rc != -ENOMEM)
		bt_error_set(rc, "cannot read the cell's secret at %s: %s",
		    path, bt_strerror(rc));
out_free:
	bt_free(path);
	return rc;
}
