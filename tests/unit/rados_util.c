/*
 * rados_util.c - the cluster the env tests also run against
 * (rados_util.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rados_util.h"
#include "tap.h"
#include "util/error.h"

bool
rados_test_target(char conf[RADOS_TEST_PATH], char pool[RADOS_TEST_PATH])
{
	const char *spec = getenv("TABLETFS_TEST_RADOS"), *colon;

	if (spec == NULL || *spec == '\0')
		return false;
	if ((colon = strrchr(spec, ':')) == NULL || colon == spec ||
	    colon[1] == '\0' || colon - spec >= RADOS_TEST_PATH ||
	    strlen(colon + 1) >= RADOS_TEST_PATH)
		tap_bail("TABLETFS_TEST_RADOS is not CONF:POOL");
	memcpy(conf, spec, (size_t)(colon - spec));
	conf[colon - spec] = '\0';
	snprintf(pool, RADOS_TEST_PATH, "%s", colon + 1);
	return true;
}

bool
rados_test_env(const char *label, struct env **env,
    char root[RADOS_TEST_PATH])
{
	char conf[RADOS_TEST_PATH], pool[RADOS_TEST_PATH];
	int rc;

	if (!rados_test_target(conf, pool)) {
		ok(1, "# SKIP %s on RADOS: TABLETFS_TEST_RADOS not set "
		    "(tests/rados/test_env_rados.sh sets it)", label);
		return false;
	}
	rc = env_rados_new(conf, pool, NULL, env);
	if (rc == -EOPNOTSUPP) {
		ok(1, "# SKIP %s on RADOS: %s", label, bt_error_detail());
		return false;
	}
	if (rc < 0) {
		diag("env_rados_new %s %s: %s", conf, pool, bt_error_detail());
		tap_bail("cannot reach the RADOS cluster");
	}
	snprintf(root, RADOS_TEST_PATH, "/%s.%ld.%ld", label, (long)getpid(),
	    (long)time(NULL));
	if (env_dir_create(*env, root) < 0) {
		diag("mkdir %s: %s", root, bt_error_detail());
		tap_bail("cannot make the test's root on RADOS");
	}
	return true;
}

struct clean {
	struct env *env;
	const char *dir;
};

static int
clean_one(void *arg, const char *name)
{
	struct clean *c = arg, sub;
	char path[RADOS_TEST_PATH * 2];

	snprintf(path, sizeof(path), "%s/%s", c->dir, name);
	if (env_path_remove(c->env, path) == -ENOTEMPTY) {
		sub.env = c->env;
		sub.dir = path;
		env_dir_list(c->env, path, clean_one, &sub);
		env_path_remove(c->env, path);
	}
	return 0;
}

void
rados_test_clean(struct env *env, const char *root)
{
	struct clean c = { env, root };

	env_dir_list(env, root, clean_one, &c);
	env_path_remove(env, root);
}
