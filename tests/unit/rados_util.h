/*
 * rados_util.h - the Ceph cluster that the env tests also run against,
 * named by TABLETFS_TEST_RADOS=CONF:POOL (a ceph.conf and a pool, as
 * tests/rados/test_env_rados.sh sets it from scripts/ceph start).
 */
#ifndef TABLETFS_TESTS_RADOS_UTIL_H
#define TABLETFS_TESTS_RADOS_UTIL_H

#include <stdbool.h>
#include <stddef.h>

#include "util/env.h"

#define RADOS_TEST_PATH	512

/*
 * The cluster the environment names: true with conf and pool filled in;
 * false when TABLETFS_TEST_RADOS is unset or empty.  Bails out when it
 * is malformed.
 */
bool rados_test_target(char conf[RADOS_TEST_PATH], char pool[RADOS_TEST_PATH]);

/*
 * A RADOS env on that cluster and a root path of this run's own under
 * which the test may do anything (made with env_dir_create()): true; or
 * false, with one SKIP test point saying why, when no cluster is named
 * or this build has no librados.  Bails out when the cluster is named
 * but cannot be reached.  label names the test in the root and in the
 * SKIP line.
 */
bool rados_test_env(const char *label, struct env **env,
    char root[RADOS_TEST_PATH]);

/* Remove root and everything under it (for the end of a test). */
void rados_test_clean(struct env *env, const char *root);

#endif
