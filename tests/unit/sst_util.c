/* sst_util.c - the SSTable tests' helpers (sst_util.h), compiled once. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "sst_util.h"

size_t
row_prefix(struct slice key)
{
	const uint8_t *slash = memchr(key.p, '/', key.n);

	return slash != NULL ? (size_t)(slash - key.p) + 1 : key.n;
}

int
prefix_collect(void *arg, struct slice key, struct slice value)
{
	struct prefix_log *l = arg;

	if (l->n < 512 && key.n <= 32) {
		memcpy(l->key_bytes[l->n], key.p, key.n);
		l->keys[l->n] = slice_make(l->key_bytes[l->n], key.n);
		l->values[l->n] = value;
	}
	l->n++;
	return l->stop_after != 0 && l->n == l->stop_after ? l->stop_rc : 0;
}

bool
prefix_log_is(const struct prefix_log *l, int row, int count)
{
	char key[32], val[48];

	if (l->n != (size_t)count)
		return false;
	for (int c = 0; c < count; c++) {
		snprintf(key, sizeof(key), "row%04d/col%03d", row, c);
		snprintf(val, sizeof(val), "value of %s", key);
		if (!slice_equal(l->keys[c], slice_str(key)) ||
		    !slice_equal(l->values[c], slice_str(val)))
			return false;
	}
	return true;
}

void
build_rows_table(struct env *env, const char *path,
    const struct sst_options *o, int rows, int step, int (*cols)(int),
    struct sst_info *info)
{
	struct sst_builder *b;
	char key[32], val[48];

	if (sst_builder_new(env, path, o, &b) < 0)
		tap_bail("sst_builder_new");
	for (int row = 0; row < rows; row += step)
		for (int c = 0; c < cols(row); c++) {
			snprintf(key, sizeof(key), "row%04d/col%03d", row, c);
			snprintf(val, sizeof(val), "value of %s", key);
			if (sst_builder_add(b, slice_str(key),
			    slice_str(val)) < 0)
				tap_bail("sst_builder_add");
		}
	if (sst_builder_finish(b, info) < 0)
		tap_bail("sst_builder_finish");
	sst_builder_free(b);
}

void
build_keys_table(struct env *env, const char *path,
    const struct sst_options *o, const char *const *keys,
    struct slice (*value)(void *arg, const char *key), void *arg,
    struct sst_info *info)
{
	struct sst_builder *b;

	env_path_remove(env, path);
	if (sst_builder_new(env, path, o, &b) < 0)
		tap_bail("sst_builder_new");
	for (size_t i = 0; keys[i] != NULL; i++)
		if (sst_builder_add(b, slice_str(keys[i]),
		    value(arg, keys[i])) < 0)
			tap_bail("sst_builder_add");
	if (sst_builder_finish(b, info) < 0)
		tap_bail("sst_builder_finish");
	sst_builder_free(b);
}

int
write_file(struct env *env, const char *path, const uint8_t *p, size_t n)
{
	struct env_file *f;
	int rc;

	env_path_remove(env, path);
	if ((rc = env_file_open(env, path, ENV_CREATE, &f)) < 0)
		return rc;
	rc = env_file_append(f, p, n);
	env_file_close(f);
	return rc;
}
