/*
 * envlat - per-operation latency of a file environment, for setting the
 * RADOS env beside the floor that `rados bench` measures on the same
 * cluster (and beside the local filesystem).
 *
 *	envlat [-n OPS] [-r ROUNDS] DIR | rados:CONF:POOL
 *
 * Each round, on a fresh file under DIR (the local filesystem) or under
 * /envlat.PID in POOL (the RADOS env): OPS (200) appends of 4 KiB each
 * followed by a sync (what a synced commit pays), OPS/4 appends of 1 MiB
 * each with a sync (more if needed to reach 16 MiB), then OPS reads of
 * 4 KiB and OPS/4 reads of 1 MiB at random aligned offsets of the first
 * 16 MiB written, one at a time; then one rename of a 16 MiB file (the
 * RADOS env copies it) and one listing of the file's directory (the
 * RADOS env scans the pool); ROUNDS (3) rounds.
 * Standard output: one line per measure with the median of the rounds'
 * medians, the median of the rounds' means (what rados bench reports as
 * its average latency) and the p99 over all rounds, in microseconds:
 *	append4k+sync p50_us X mean_us Y p99_us Z
 * Each round's medians go to standard error.  Everything written is
 * removed at the end.  Exit status 1 on an error.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/bench.h"
#include "util/env.h"
#include "util/error.h"

#define MAX_ROUNDS	20
#define SMALL		4096u
#define LARGE		(1u << 20)
#define FILE_BYTES	(16u << 20)

enum {
	APPEND_SMALL, APPEND_LARGE, READ_SMALL, READ_LARGE, RENAME, LIST,
	MEASURES
};

static const char *const measure_names[MEASURES] = {
	"append4k+sync", "append1m+sync", "read4k", "read1m", "rename16m",
	"list",
};

static int
fail(const char *what, int rc)
{
	fprintf(stderr, "envlat: %s: %s (%s)\n", what, strerror(-rc),
	    bt_error_detail());
	return 1;
}

static int
envlat_count(void *arg, const char *name)
{
	(void)name;
	(*(size_t *)arg)++;
	return 0;
}

/* One round: appends with syncs, random reads, a rename, a listing. */
static int
envlat_round(struct env *env, const char *dir, const char *path, int ops,
    double *out[], size_t counts[], uint64_t *rnd)
{
	char from[700], to[700];
	size_t names = 0;
	static uint8_t buf[LARGE];
	struct env_file *f;
	uint64_t written = 0, off;
	size_t got;
	double t;
	int rc;

	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(i * 7);
	if ((rc = env_file_open(env, path, ENV_CREATE, &f)) < 0)
		return fail("create", rc);
	for (int i = 0; i < ops; i++) {
		t = bench_now_us();
		if ((rc = env_file_append(f, buf, SMALL)) < 0 ||
		    (rc = env_file_sync(f)) < 0)
			return fail("append 4 KiB", rc);
		out[APPEND_SMALL][counts[APPEND_SMALL]++] = bench_now_us() - t;
		written += SMALL;
	}
	for (int i = 0; i < ops / 4 || written < FILE_BYTES; i++) {
		t = bench_now_us();
		if ((rc = env_file_append(f, buf, LARGE)) < 0 ||
		    (rc = env_file_sync(f)) < 0)
			return fail("append 1 MiB", rc);
		if (i < ops / 4)
			out[APPEND_LARGE][counts[APPEND_LARGE]++] =
			    bench_now_us() - t;
		written += LARGE;
	}
	for (int i = 0; i < ops; i++) {
		*rnd = *rnd * 6364136223846793005ull + 1442695040888963407ull;
		off = (*rnd >> 33) % (FILE_BYTES / SMALL) * SMALL;
		t = bench_now_us();
		if ((rc = env_file_read_at(f, off, buf, SMALL, &got)) < 0)
			return fail("read 4 KiB", rc);
		out[READ_SMALL][counts[READ_SMALL]++] = bench_now_us() - t;
	}
	for (int i = 0; i < ops / 4; i++) {
		*rnd = *rnd * 6364136223846793005ull + 1442695040888963407ull;
		off = (*rnd >> 33) % (FILE_BYTES / LARGE) * LARGE;
		t = bench_now_us();
		if ((rc = env_file_read_at(f, off, buf, LARGE, &got)) < 0)
			return fail("read 1 MiB", rc);
		out[READ_LARGE][counts[READ_LARGE]++] = bench_now_us() - t;
	}
	env_file_close(f);
	snprintf(from, sizeof(from), "%s.from", path);
	snprintf(to, sizeof(to), "%s.to", path);
	if ((rc = env_file_open(env, from, ENV_CREATE, &f)) < 0)
		return fail("create", rc);
	for (int i = 0; i < (int)(FILE_BYTES / LARGE); i++)
		if ((rc = env_file_append(f, buf, LARGE)) < 0)
			return fail("append", rc);
	if ((rc = env_file_sync(f)) < 0)
		return fail("sync", rc);
	env_file_close(f);
	t = bench_now_us();
	if ((rc = env_path_rename(env, from, to)) < 0)
		return fail("rename", rc);
	out[RENAME][counts[RENAME]++] = bench_now_us() - t;
	t = bench_now_us();
	if ((rc = env_dir_list(env, dir, envlat_count, &names)) < 0)
		return fail("list", rc);
	out[LIST][counts[LIST]++] = bench_now_us() - t;
	if ((rc = env_path_remove(env, to)) < 0 ||
	    (rc = env_path_remove(env, path)) < 0)
		return fail("remove", rc);
	return 0;
}

int
main(int argc, char **argv)
{
	double *all[MEASURES], *round[MEASURES], medians[MEASURES][MAX_ROUNDS];
	double means[MEASURES][MAX_ROUNDS];
	size_t counts[MEASURES], start[MEASURES];
	char dir[512], path[600], conf[512];
	int ops = 200, rounds = 3, c, rc;
	uint64_t rnd = 42;
	struct env *env;
	const char *target, *colon;

	while ((c = getopt(argc, argv, "n:r:")) != -1) {
		switch (c) {
		case 'n':
			ops = atoi(optarg);
			break;
		case 'r':
			rounds = atoi(optarg);
			break;
		default:
			goto usage;
		}
	}
	if (optind + 1 != argc || ops < 4 || rounds < 1 ||
	    rounds > MAX_ROUNDS)
		goto usage;
	target = argv[optind];
	if (strncmp(target, "rados:", 6) == 0) {
		if ((colon = strrchr(target + 6, ':')) == NULL ||
		    (size_t)(colon - target - 6) >= sizeof(conf))
			goto usage;
		memcpy(conf, target + 6, (size_t)(colon - target - 6));
		conf[colon - target - 6] = '\0';
		if ((rc = env_rados_new(conf, colon + 1, NULL, &env)) < 0)
			return fail("env_rados_new", rc);
		snprintf(dir, sizeof(dir), "/envlat.%ld", (long)getpid());
	} else {
		if ((rc = env_posix_new(&env)) < 0)
			return fail("env_posix_new", rc);
		snprintf(dir, sizeof(dir), "%s", target);
	}
	snprintf(path, sizeof(path), "%s/envlat.%ld", dir, (long)getpid());
	for (int m = 0; m < MEASURES; m++) {
		counts[m] = 0;
		if ((all[m] = calloc((size_t)ops * rounds, sizeof(double))) ==
		    NULL || (round[m] = calloc((size_t)ops,
		    sizeof(double))) == NULL)
			return fail("calloc", -ENOMEM);
	}
	for (int r = 0; r < rounds; r++) {
		for (int m = 0; m < MEASURES; m++)
			start[m] = counts[m];
		if (envlat_round(env, dir, path, ops, all, counts, &rnd) != 0)
			return 1;
		fprintf(stderr, "round %d:", r + 1);
		for (int m = 0; m < MEASURES; m++) {
			size_t n = counts[m] - start[m];
			double sum = 0;

			memcpy(round[m], all[m] + start[m], n * sizeof(double));
			for (size_t i = 0; i < n; i++)
				sum += round[m][i];
			means[m][r] = sum / (double)n;
			medians[m][r] = bench_quantile(round[m], n, 0.5);
			fprintf(stderr, " %s %.0f", measure_names[m],
			    medians[m][r]);
		}
		fprintf(stderr, " (median us)\n");
	}
	for (int m = 0; m < MEASURES; m++)
		printf("%s p50_us %.0f mean_us %.0f p99_us %.0f\n",
		    measure_names[m], bench_quantile(medians[m], (size_t)rounds, 0.5),
		    bench_quantile(means[m], (size_t)rounds, 0.5),
		    bench_quantile(all[m], counts[m], 0.99));
	env_free(env);
	return 0;
usage:
	fprintf(stderr, "usage: envlat [-n OPS] [-r ROUNDS] "
	    "DIR | rados:CONF:POOL\n");
	return 2;
}
