/*
 * test_rpc_secret.c - the cell's secret in its storage (rpc.h): made
 * once, 32 bytes, read back the same, a second make refused with the
 * first kept; reading none, a short one or one that cannot be read fails
 * with a detail naming the file; and on the directory backend the file is
 * mode 0600 from its creation, whatever the umask.  On the local
 * filesystem, in the in-memory env, and on RADOS when
 * TABLETFS_TEST_RADOS names a cluster (tests/rados/test_env_rados.sh).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rados_util.h"
#include "rpc/rpc.h"
#include "tap.h"
#include "util/env.h"
#include "util/error.h"

static bool
detail_has(const char *what)
{
	return strstr(bt_error_detail(), what) != NULL;
}

/* Write n bytes of p as path, replacing nothing. */
static void
spew(struct env *env, const char *path, const void *p, size_t n)
{
	struct env_file *f;

	if (env_file_open(env, path, ENV_CREATE, &f) < 0 ||
	    env_file_append(f, p, n) < 0 || env_file_close(f) < 0)
		tap_bail("cannot write a test file");
}

static void
test_secret(struct env *env, const char *root, const char *label)
{
	uint8_t a[RPC_SECRET_SIZE], b[RPC_SECRET_SIZE], zero[RPC_SECRET_SIZE];
	char dir[600], path[700];
	int rc;

	memset(zero, 0, sizeof(zero));
	snprintf(dir, sizeof(dir), "%s/cell", root);
	snprintf(path, sizeof(path), "%s/%s", dir, RPC_SECRET_FILE);
	if (env_dir_create(env, dir) < 0)
		tap_bail("mkdir");

	rc = rpc_secret_read(env, dir, a);
	is_int(rc, -ENOENT, "%s: no secret yet: ENOENT", label);
	ok(detail_has("cannot read the cell's secret at ") &&
	    detail_has(path), "%s: the detail names the file: %s", label,
	    bt_error_detail());

	is_int(rpc_secret_create(env, dir), 0, "%s: make the secret", label);
	is_int(rpc_secret_read(env, dir, a), 0, "%s: read it", label);
	ok(memcmp(a, zero, sizeof(a)) != 0, "%s: it is not zeros", label);
	is_int(rpc_secret_read(env, dir, b), 0, "%s: read it again", label);
	ok(memcmp(a, b, sizeof(a)) == 0, "%s: the same bytes", label);

	rc = rpc_secret_create(env, dir);
	is_int(rc, -EEXIST, "%s: a second make is refused", label);
	ok(detail_has(path), "%s: naming the file: %s", label,
	    bt_error_detail());
	is_int(rpc_secret_read(env, dir, b), 0, "%s: the first is kept", label);
	ok(memcmp(a, b, sizeof(a)) == 0, "%s: with its bytes", label);

	is_int(env_path_remove(env, path), 0, "%s: remove it", label);
	spew(env, path, "short", 5);
	rc = rpc_secret_read(env, dir, b);
	is_int(rc, BT_ECORRUPT, "%s: a secret of 5 bytes is refused", label);
	ok(detail_has(path) && detail_has("5 bytes, not 32"),
	    "%s: saying so: %s", label, bt_error_detail());
	is_int(env_path_remove(env, path), 0, "%s: and removed", label);
	is_int(rpc_secret_create(env, dir), 0, "%s: a new one", label);
	is_int(rpc_secret_read(env, dir, b), 0, "%s: read", label);
	ok(memcmp(a, b, sizeof(a)) != 0, "%s: differs from the first", label);
	(void)env_path_remove(env, path);
}

/* The posix file's mode, and reading it when its mode keeps one out. */
static void
test_posix_mode(struct env *env, const char *root)
{
	uint8_t s[RPC_SECRET_SIZE];
	char dir[600], path[700];
	struct stat st;
	mode_t old;
	int rc;

	snprintf(dir, sizeof(dir), "%s/mode", root);
	snprintf(path, sizeof(path), "%s/%s", dir, RPC_SECRET_FILE);
	if (env_dir_create(env, dir) < 0)
		tap_bail("mkdir");
	old = umask(0);		/* a umask that would leave 0644 as it is */
	rc = rpc_secret_create(env, dir);
	umask(old);
	is_int(rc, 0, "posix: make the secret under umask 0");
	if (stat(path, &st) < 0)
		memset(&st, 0, sizeof(st));
	ok((st.st_mode & 07777) == 0600 &&
	    st.st_size == RPC_SECRET_SIZE, "posix: the file is mode 0600, "
	    "32 bytes (mode %o)", (unsigned)(st.st_mode & 07777));
	if (geteuid() == 0) {
		ok(1, "# SKIP posix: an unreadable secret (root reads all; "
		    "tests/cell/test_cell_secret.sh tries it as nobody)");
		ok(1, "# SKIP posix: its detail");
	} else {
		chmod(path, 0);
		rc = rpc_secret_read(env, dir, s);
		is_int(rc, -EACCES, "posix: a secret that cannot be read");
		ok(detail_has("cannot read the cell's secret at ") &&
		    detail_has(path) && detail_has("Permission denied"),
		    "posix: its detail: %s", bt_error_detail());
	}
	unlink(path);
	rmdir(dir);
}

int
main(void)
{
	char root[] = "/tmp/test_rpc_secret.XXXXXX";
	char rroot[RADOS_TEST_PATH];
	struct env *env;

	if (mkdtemp(root) == NULL || env_posix_new(&env) < 0)
		tap_bail("setup");
	test_secret(env, root, "posix");
	test_posix_mode(env, root);
	rmdir(root);
	env_free(env);

	if (env_fault_new(&env) < 0 || env_dir_create(env, "/m") < 0)
		tap_bail("setup");
	test_secret(env, "/m", "memory");
	env_free(env);

	if (rados_test_env("test_rpc_secret", &env, rroot)) {
		test_secret(env, rroot, "rados");
		rados_test_clean(env, rroot);
		env_free(env);
	}
	return tap_done();
}
