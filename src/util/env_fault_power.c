/*
 * env_fault_power.c - what a test does to the fault env's tree between
 * runs: power loss (env_fault_drop_unsynced, and its torn variant) and
 * damage (env_fault_flip_byte), declared in util/env.h.
 *
 * Power loss copies every directory's durable slot back over its "now"
 * slot and truncates every file to its synced length, or swaps its
 * shadow (the synced bytes a write at an offset changed) back in, which
 * undoes unsynced creates, renames and removes without any allocation.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <string.h>

#include "util/buf.h"
#include "util/env.h"
#include "util/env_fault_int.h"
#include "util/error.h"

/* Put a file's shadow back as its content, without allocating. */
static void
fault_drop_overwrites(struct fault_node *node)
{
	struct buf tmp = node->data;

	node->data = node->shadow;
	node->shadow = tmp;
	buf_clear(&node->shadow);
	node->overwritten = false;
}

/* The next of a xorshift sequence; never 0 from a non-zero seed. */
static uint64_t
fault_rand(uint64_t *state)
{
	uint64_t x = *state;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *state = x;
}

/*
 * Cut a file's unsynced part at a random page (or not at all), and zero
 * a random half of the pages before the cut.
 */
static void
fault_tear_file(struct fault_node *node, uint64_t *rng)
{
	uint64_t page = node->synced - node->synced % ENV_FAULT_PAGE;
	uint64_t pages = (node->data.n - page) / ENV_FAULT_PAGE + 1;
	uint64_t end = page + fault_rand(rng) % (pages + 1) * ENV_FAULT_PAGE;

	if (end < node->synced)
		end = node->synced;
	if (end < node->data.n)
		node->data.n = (size_t)end;
	for (; page < node->data.n; page += ENV_FAULT_PAGE) {
		uint64_t from = page < node->synced ? node->synced : page;
		uint64_t to = page + ENV_FAULT_PAGE;

		if (to > node->data.n)
			to = node->data.n;
		if (fault_rand(rng) & 1)
			memset(node->data.p + from, 0, (size_t)(to - from));
	}
	node->synced = node->data.n;	/* what is on the disk now */
}

/*
 * Revert one directory to its durable entries, then what it holds; with
 * rng, the unsynced parts of files are torn rather than cut off.
 */
static void
fault_drop_dir(struct fault_node *dir, uint64_t *rng)
{
	struct fault_entry *en;
	struct fault_node *node;
	size_t i;

	for (i = 0; i < dir->n; i++) {
		en = &dir->v[i];
		if (en->now != en->durable) {
			fault_node_ref(en->durable);
			fault_node_unref(en->now);
			en->now = en->durable;
		}
		if ((node = en->now) == NULL)
			continue;
		if (node->is_dir)
			fault_drop_dir(node, rng);
		else if (node->overwritten)
			fault_drop_overwrites(node);
		else if (node->data.n > node->synced && rng != NULL)
			fault_tear_file(node, rng);
		else if (node->data.n > node->synced)
			node->data.n = (size_t)node->synced;
	}
	fault_dir_compact(dir);
}

void
env_fault_drop_unsynced(struct env *env)
{
	struct fault_env *e = fault_env_of(env);

	if (e == NULL)
		return;
	mutex_lock(&e->mu);
	fault_drop_dir(e->root, NULL);
	mutex_unlock(&e->mu);
}

void
env_fault_drop_unsynced_torn(struct env *env, uint64_t seed)
{
	struct fault_env *e = fault_env_of(env);
	uint64_t rng = seed | 1;

	if (e == NULL)
		return;
	mutex_lock(&e->mu);
	fault_drop_dir(e->root, &rng);
	mutex_unlock(&e->mu);
}

int
env_fault_flip_byte(struct env *env, const char *path, uint64_t offset,
    uint8_t mask)
{
	struct fault_env *e = fault_env_of(env);
	struct fault_node *node;
	int rc;

	if (e == NULL)
		return bt_error_set(-EINVAL, "%s: not a fault env", path);
	mutex_lock(&e->mu);
	if ((rc = fault_find(e, path, &node)) < 0) {
		rc = fault_error(rc, path, "flip byte");
		goto out;
	}
	if (node->is_dir) {
		rc = fault_error(-EISDIR, path, "flip byte");
		goto out;
	}
	if (offset >= node->data.n) {
		rc = bt_error_set(-EINVAL, "%s: flip byte at offset %" PRIu64
		    " past the end (%zu bytes)", path, offset, node->data.n);
		goto out;
	}
	node->data.p[offset] ^= mask;
	if (node->overwritten && offset < node->shadow.n)
		node->shadow.p[offset] ^= mask;
out:
	mutex_unlock(&e->mu);
	return rc;
}
