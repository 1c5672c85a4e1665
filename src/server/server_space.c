/*
 * server_space.c - the disk-space reserve and the disk-full state of a
 * store (server_int.h).
 *
 * A store on a full disk must still be able to free what was deleted:
 * the deletes go to the commit log, the flush of the memtable holding
 * them writes an SSTable and updates the catalog, and only then can the
 * log segments go; a compaction writes its output before its inputs are
 * deleted.  Each step needs a little room first.  So the store keeps a
 * reserve, as CockroachDB keeps its emergency ballast file, and while the
 * disk is full accepts deletes and refuses what adds data, as etcd does
 * under its NOSPACE alarm: STORE/reserve, a file of space_reserve_size()
 * bytes allocated in full.
 *
 * The rules:
 *   1. The first ENOSPC (or EDQUOT) that a log append, flush or
 *      compaction meets puts the store in the disk-full state and removes
 *      the reserve, whose room is then the maintenance's.
 *   2. While full, a mutation that adds data (any put) is refused with
 *      ENOSPC before it reaches the log; deletes are logged and applied
 *      as usual.  The background thread flushes and compacts nothing
 *      (server_background.c, background_round): a flush of data that is not
 *      deleted yet would take the reserve's room while the deletes are
 *      still coming, and the compaction asked for afterwards would find
 *      none.  Flushes and compactions run when asked for (tabletctl
 *      compact, server_compact) and at close, and log segments and
 *      obsolete files are deleted as usual.
 *   3. Once the filesystem has twice the reserve free (deleting data and
 *      a compaction, or room freed outside the store), the reserve is
 *      taken again (written, synced, its directory entry synced) and the
 *      state ends.  The check runs after every background round and
 *      compaction, and before a refused write is refused.
 *   4. At open, a reserve found with less than its own size free besides
 *      is removed and the store opens full; a store without its reserve
 *      takes it only with twice its size free, else it opens full.
 *
 * Nothing here is about durability: the reserve holds no data, and a
 * crash at any point leaves it present, absent or short, which rule 4
 * sorts out.  With no capacity known (the in-memory env) there is no
 * reserve, and the state ends as soon as SPACE_RESUME_MIN bytes are free.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "server/server_int.h"
#include "util/alloc.h"
#include "util/error.h"

#define SPACE_RESERVE_MIN	(256ull << 10)
#define SPACE_RESERVE_MAX	(64ull << 20)
/* Free bytes that end the state when there is no reserve. */
#define SPACE_RESUME_MIN	(1ull << 20)
/* Zeros written at a time where the filesystem cannot allocate. */
#define SPACE_ZERO_CHUNK	(64u << 10)

/* The caller's error detail, kept across the file operations here, which
 * would replace it with their own (a compaction's ENOSPC would read as a
 * failed removal of the reserve). */
struct detail_save {
	char text[512];
};

static void
detail_save(struct detail_save *d)
{
	snprintf(d->text, sizeof(d->text), "%s", bt_error_detail());
}

static void
detail_restore(const struct detail_save *d)
{
	(void)bt_error_set(0, "%s", d->text);
}

/* A 32nd of the filesystem, within [SPACE_RESERVE_MIN, MAX], in whole
 * 4 KiB pages; 0 when the capacity is not known. */
static uint64_t
space_reserve_size(uint64_t capacity)
{
	uint64_t size;

	if (capacity == UINT64_MAX || capacity == 0)
		return 0;
	size = capacity / 32;
	if (size < SPACE_RESERVE_MIN)
		size = SPACE_RESERVE_MIN;
	if (size > SPACE_RESERVE_MAX)
		size = SPACE_RESERVE_MAX;
	return size & ~(uint64_t)4095;
}

bool
server_space_is_full_error(int rc)
{
	return rc == -ENOSPC || rc == -EDQUOT;
}

/* Write the reserve's bytes where the filesystem cannot allocate them. */
static int
reserve_fill(struct env_file *f, uint64_t size)
{
	uint8_t *zeros;
	int rc = 0;

	if ((zeros = bt_calloc(1, SPACE_ZERO_CHUNK)) == NULL)
		return -ENOMEM;
	for (uint64_t off = 0; off < size && rc == 0; off += SPACE_ZERO_CHUNK)
		rc = env_file_write_at(f, off, zeros, size - off <
		    SPACE_ZERO_CHUNK ? (size_t)(size - off) : SPACE_ZERO_CHUNK);
	bt_free(zeros);
	return rc;
}

/*
 * Make STORE/reserve hold reserve_size bytes on disk, synced, with its
 * directory entry synced; caller holds space_mu.  A partial one is
 * removed on failure.
 */
static int
reserve_take_locked(struct server *s)
{
	struct env_file *f;
	int rc;

	mutex_assert_held(&s->space_mu);
	env_path_remove(s->env, s->reserve_path);
	if ((rc = env_file_open(s->env, s->reserve_path, ENV_CREATE,
	    &f)) < 0)
		goto out;
	rc = env_file_allocate(f, 0, s->reserve_size);
	if (rc == -EOPNOTSUPP)
		rc = reserve_fill(f, s->reserve_size);
	if (rc == 0)
		rc = env_file_sync(f);
	env_file_close(f);
	if (rc == 0 && (rc = env_dir_sync(s->env, s->home_dir)) == 0) {
		s->reserve_held = true;
		return 0;
	}
	env_path_remove(s->env, s->reserve_path);
out:
	return rc;
}

/* Give the reserve's room back to the filesystem; caller holds
 * space_mu. */
static void
reserve_release_locked(struct server *s)
{
	mutex_assert_held(&s->space_mu);
	if (env_path_remove(s->env, s->reserve_path) == 0)
		(void)env_dir_sync(s->env, s->home_dir);
	s->reserve_held = false;
}

int
server_space_open(struct server *s)
{
	uint64_t capacity, available, size = 0;
	int rc;

	if ((s->reserve_path = bt_malloc(strlen(s->home_dir) + 9)) == NULL)
		return -ENOMEM;
	sprintf(s->reserve_path, "%s/reserve", s->home_dir);
	if (s->opts.read_only)
		return 0;
	if (env_path_capacity(s->env, s->home_dir, &capacity) < 0)
		capacity = UINT64_MAX;
	s->reserve_size = space_reserve_size(capacity);
	if ((rc = env_path_available(s->env, s->home_dir, &available)) < 0)
		return rc;
	mutex_lock(&s->space_mu);
	if (env_path_size(s->env, s->reserve_path, &size) < 0)
		size = 0;
	if (s->reserve_size == 0) {
		if (size > 0)
			reserve_release_locked(s);
	} else if (size >= s->reserve_size && available >= s->reserve_size) {
		s->reserve_held = true;
	} else if (size > 0 && available + size < 2 * s->reserve_size) {
		reserve_release_locked(s);
		atomic_store(&s->disk_full, -ENOSPC);
	} else if (available + size >= 2 * s->reserve_size) {
		if (reserve_take_locked(s) < 0)
			atomic_store(&s->disk_full, -ENOSPC);
	} else {
		atomic_store(&s->disk_full, -ENOSPC);
	}
	mutex_unlock(&s->space_mu);
	return 0;
}

void
server_space_note(struct server *s, int rc)
{
	struct detail_save d;

	if (!server_space_is_full_error(rc) || s->opts.read_only)
		return;
	detail_save(&d);
	mutex_lock(&s->space_mu);
	atomic_store(&s->disk_full, rc);
	if (s->reserve_held)
		reserve_release_locked(s);
	mutex_unlock(&s->space_mu);
	detail_restore(&d);
}

bool
server_space_full(struct server *s)
{
	struct detail_save d;
	uint64_t available;
	bool full;

	if (atomic_load(&s->disk_full) == 0)
		return false;
	detail_save(&d);
	mutex_lock(&s->space_mu);
	full = atomic_load(&s->disk_full) < 0;
	if (full && env_path_available(s->env, s->home_dir,
	    &available) == 0) {
		if (s->reserve_size == 0)
			full = available < SPACE_RESUME_MIN;
		else if (available >= 2 * s->reserve_size)
			full = reserve_take_locked(s) < 0;
		if (!full)
			atomic_store(&s->disk_full, 0);
	}
	mutex_unlock(&s->space_mu);
	detail_restore(&d);
	return full;
}

int
server_space_refuse(struct server *s, const struct mutation *ops, size_t count)
{
	bool adds = false;

	if (atomic_load(&s->disk_full) == 0)
		return 0;
	for (size_t i = 0; i < count; i++)
		adds |= ops[i].kind == MUTATION_PUT;
	if (!adds || !server_space_full(s))
		return 0;
	return bt_error_set(-ENOSPC, "the disk is full: writes are refused "
	    "until deleting data (deletes are accepted) and a compaction, "
	    "or room freed elsewhere, leave %" PRIu64 " bytes free",
	    s->reserve_size > 0 ? 2 * s->reserve_size :
	    (uint64_t)SPACE_RESUME_MIN);
}

void
server_space_get_stats(struct server *s, int *disk_full,
    uint64_t *reserve_bytes)
{
	mutex_lock(&s->space_mu);
	*disk_full = atomic_load(&s->disk_full);
	*reserve_bytes = s->reserve_held ? s->reserve_size : 0;
	mutex_unlock(&s->space_mu);
}

int
server_space_measure(struct server *s, struct env_space *out)
{
	return env_path_space(s->env, s->home_dir, out);
}
