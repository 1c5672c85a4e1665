/*
 * log_writer.c - appending to the commit log.
 *
 * One caller at a time appends, syncs and rotates: the tablet server's
 * write queue (server_queue.c) batches concurrent mutations into one
 * append_many() and at most one sync, and so is the group commit; a
 * second queue here would only hand the same batch over again.  Each
 * append encodes its records into one buffer and writes it in place with
 * one env_file_write_at(), followed, when asked, by one env_file_sync().
 * A record part of LOG_PART_IN_PLACE bytes or more (a large value) is
 * not copied into that buffer: the append is then one
 * env_file_write_parts_at() (a pwritev) of the buffer's runs and those
 * parts in order, the same bytes at the same offsets, under the same
 * single appender, and synced by the same fdatasync.
 *
 * A segment's space is reserved a chunk ahead of its records
 * (env_file_allocate), so that on filesystems that journal a file's size
 * (ext4, xfs) the fdatasync of a group commit writes the data alone, not
 * a new size as well.  The reserved bytes read as zeros, which the format
 * takes as the segment's end; a closed or rotated segment is cut back to
 * its records.
 *
 * Reserved space is unwritten to the filesystem (an ext4 or xfs
 * "unwritten extent"): the first write into it changes the file's extent
 * map, which the fdatasync covering it must journal.  So a writer whose
 * appends sync writes zeros a little ahead of its records (LOG_ZERO_AHEAD,
 * synced by the same fdatasync as the records before them), and the
 * records of later groups land in space already written: their syncs
 * flush data alone.  Appends that do not sync never write zeros.
 *
 * The invariants, cited by number below:
 *
 * L1. One appender.  Appends, syncs, rotations and the close run one at
 *     a time (log.h); the fields marked "appender" are that thread's
 *     alone.  Debug builds check it.
 * L2. Durability marks.  In the current segment, marked <= synced <=
 *     offset: the segment is durable up to synced, and the last synced
 *     field written into a record says marked.
 * L3. Shared fields.  segment, offset and stats (with the poison) are
 *     changed by the appender under mu, so any thread may read them
 *     under mu.
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log/format.h"
#include "log/log.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/coding.h"
#include "util/crc32c.h"
#include "util/error.h"
#include "util/mutex.h"

/* A write buffer grown past 4 times this is given back after use. */
#define LOG_BATCH_MAX			(1u << 20)
/* Segment paths are the directory plus "/" 16 digits ".log" and a NUL. */
#define LOG_SEGMENT_NAME_EXTRA		22
/* Space is reserved this much at a time (never past the segment size). */
#define LOG_RESERVE_CHUNK		(1ull << 20)
/* A syncing writer keeps zeros written up to this far past its records,
 * topping them up once less than half of it is left. */
#define LOG_ZERO_AHEAD			(64u << 10)

struct log_writer {
	struct env *env;
	char *dir;
	uint64_t segment_size;
	uint64_t max_file_size;	/* log_options.max_file_size; 0: none */
	uint64_t headroom;	/* log_options.reserve_headroom */

	struct mutex mu;

	/* Read under mu by any thread; written by the appender under mu. */
	uint64_t segment;
	uint64_t offset;	/* end of the last good record */
	struct log_writer_stats stats;

	/* Appender only. */
	struct env_file *file;
	uint64_t synced;	/* the segment is durable up to here */
	uint64_t marked;	/* the last synced field written in it */
	uint64_t reserved;	/* space is reserved (or was tried) to here */
	uint64_t reserve_next;	/* reserve no sooner than records reach here */
	uint64_t file_end;	/* the file may be this long (reserved) */
	uint64_t zeroed;	/* zeros are written (not just reserved) to */
	uint8_t *zeros;		/* LOG_ZERO_AHEAD zero bytes, or NULL */
	char *path;		/* the current segment */
	char *next_path;	/* scratch for the next one */
	size_t path_size;
	struct buf batch;
	struct slice *pieces;	/* what a batch with in-place parts writes */
	size_t pieces_cap;
#ifndef NDEBUG
	atomic_int appending;	/* L1: an appender is inside */
#endif
};

/* Enter and leave an appender's call (L1): abort when another is
 * inside. */
static inline void
appender_enter(struct log_writer *w)
{
#ifndef NDEBUG
	int inside = atomic_exchange_explicit(&w->appending, 1,
	    memory_order_acquire);

	assert(inside == 0);
#else
	(void)w;
#endif
}

static inline void
appender_leave(struct log_writer *w)
{
#ifndef NDEBUG
	atomic_store_explicit(&w->appending, 0, memory_order_release);
#else
	(void)w;
#endif
}

void
log_segment_path(char *dst, size_t size, const char *dir, uint64_t n)
{
	snprintf(dst, size, "%s/%016" PRIu64 ".log", dir, n);
}

static void
segment_header_encode(uint8_t *dst)
{
	put_fixed64(dst, LOG_MAGIC);
	put_fixed32(dst + 8, LOG_FORMAT_VERSION);
	put_fixed32(dst + 12, crc32c_mask(crc32c_value(dst, 12)));
}

/*
 * How far to reserve a segment whose records will reach end: a chunk past
 * offset, but not past the segment's size unless end already is.
 */
static uint64_t
reserve_target(uint64_t segment_size, uint64_t offset, uint64_t end)
{
	uint64_t target = offset + LOG_RESERVE_CHUNK;

	if (target > segment_size)
		target = segment_size;
	return target > end ? target : end;
}

/*
 * Whether reserving len more bytes in dir leaves its filesystem headroom
 * bytes free (log_options.reserve_headroom); true when it cannot tell.
 */
static bool
reserve_fits(struct env *env, const char *dir, uint64_t headroom,
    uint64_t len)
{
	uint64_t available;

	if (headroom == 0 || env_path_available(env, dir, &available) < 0)
		return true;
	return available >= len && available - len >= headroom;
}

/*
 * Reserve space for the segment's records up to end, a chunk at a time.
 * The reservation is advisory: where the filesystem cannot make it (no
 * support, no space), records are written past it all the same, and it
 * is tried again a chunk later.  Where it would leave the filesystem less
 * than the headroom, it is not made, and asked again once the records
 * have gone LOG_ZERO_AHEAD further: a nearly full disk is left to the
 * flushes, which free the memtables and the log (a megabyte reserved
 * on a disk that a flush needed had the writes fail with ENOSPC until the
 * segment's end, though room was freed).
 */
static void
writer_reserve(struct log_writer *w, uint64_t end)
{
	uint64_t target;

	if (end <= w->reserved || end <= w->reserve_next)
		return;
	target = reserve_target(w->segment_size, w->offset, end);
	if (!reserve_fits(w->env, w->dir, w->headroom, target - w->offset)) {
		w->reserve_next = end + LOG_ZERO_AHEAD;
		return;
	}
	(void)env_file_allocate(w->file, w->offset, target - w->offset);
	/* Even a failed reservation may have grown the file part way. */
	if (target > w->file_end)
		w->file_end = target;
	w->reserved = target;
}

/*
 * Before a sync of the records that end at end, write zeros into the
 * reserved space ahead of them, if fewer than half of LOG_ZERO_AHEAD are
 * written there, so that the sync converts that space once (module
 * comment).  Best effort, as the reservation is: on failure the space is
 * reserved zeros still, and nothing is lost but the head start.  Never
 * rewrites zeros already written, which would only give the sync more
 * pages to flush.
 */
static void
writer_zero_ahead(struct log_writer *w, uint64_t end)
{
	uint64_t from = w->zeroed > end ? w->zeroed : end, to;

	if (from >= end + LOG_ZERO_AHEAD / 2)
		return;
	to = end + LOG_ZERO_AHEAD;
	if (to > w->reserved)
		to = w->reserved;
	if (to <= from)
		return;
	if (w->zeros == NULL &&
	    (w->zeros = bt_calloc(1, LOG_ZERO_AHEAD)) == NULL)
		return;
	if (env_file_write_at(w->file, from, w->zeros,
	    (size_t)(to - from)) == 0)
		w->zeroed = to;
}

/*
 * Cut a segment's reserved tail back to its records, best effort: the
 * zeros a failed cut leaves read as the segment's end all the same.
 */
static void
segment_trim(struct env_file *f, uint64_t offset, uint64_t file_end)
{
	if (file_end > offset)
		(void)env_file_truncate(f, offset);
}

/*
 * Create segment file path, write its header, reserve its first chunk
 * and make the file and its directory entry durable, so that the first
 * record's sync journals no new size.  *reserved receives how far the
 * reservation reaches (the header's end if it failed: it is advisory, as
 * in writer_reserve), *file_end how long the file may have grown.  On
 * failure nothing is left behind (the file is removed if it was created).
 */
static int
segment_create(struct env *env, const char *dir, const char *path,
    uint64_t segment_size, uint64_t headroom, struct env_file **out,
    uint64_t *reserved, uint64_t *file_end)
{
	uint8_t header[LOG_SEGMENT_HEADER_SIZE];
	uint64_t target, got;
	struct env_file *f;
	int rc;

	segment_header_encode(header);
	target = reserve_target(segment_size, sizeof(header), sizeof(header));
	if ((rc = env_file_open(env, path, ENV_CREATE, &f)) < 0)
		goto out;
	if ((rc = env_file_write_at(f, 0, header, sizeof(header))) < 0)
		goto out_remove;
	if (!reserve_fits(env, dir, headroom, target - sizeof(header)))
		target = sizeof(header);
	got = target > sizeof(header) && env_file_allocate(f,
	    sizeof(header), target - sizeof(header)) == 0 ? target :
	    sizeof(header);
	if ((rc = env_file_sync(f)) < 0 ||
	    (rc = env_dir_sync(env, dir)) < 0)
		goto out_remove;
	*out = f;
	*reserved = got;
	*file_end = target;
	return 0;
out_remove:
	env_file_close(f);
	env_path_remove(env, path);
out:
	return rc;
}

int
log_writer_open(struct env *env, const char *dir, uint64_t first_segment,
    const struct log_options *opts, struct log_writer **out)
{
	struct log_writer *w;
	int rc = -ENOMEM;

	if ((w = bt_calloc(1, sizeof(*w))) == NULL)
		goto out;
	w->env = env;
	w->segment_size = opts != NULL && opts->segment_size != 0 ?
	    opts->segment_size : LOG_DEFAULT_SEGMENT_SIZE;
	w->max_file_size = opts != NULL ? opts->max_file_size : 0;
	w->headroom = opts != NULL ? opts->reserve_headroom : 0;
	buf_init(&w->batch);
	if ((w->dir = bt_strdup(dir)) == NULL)
		goto out_free;
	w->path_size = strlen(dir) + LOG_SEGMENT_NAME_EXTRA;
	if ((w->path = bt_malloc(w->path_size)) == NULL)
		goto out_dir;
	if ((w->next_path = bt_malloc(w->path_size)) == NULL)
		goto out_path;
	if ((rc = mutex_init(&w->mu)) < 0)
		goto out_next_path;
	log_segment_path(w->path, w->path_size, dir, first_segment);
	if ((rc = segment_create(env, dir, w->path, w->segment_size,
	    w->headroom, &w->file, &w->reserved, &w->file_end)) < 0)
		goto out_mutex;
	w->segment = first_segment;
	w->offset = LOG_SEGMENT_HEADER_SIZE;
	w->synced = LOG_SEGMENT_HEADER_SIZE;
	w->marked = LOG_SEGMENT_HEADER_SIZE;
	w->zeroed = LOG_SEGMENT_HEADER_SIZE;
	*out = w;
	return 0;
out_mutex:
	mutex_destroy(&w->mu);
out_next_path:
	bt_free(w->next_path);
out_path:
	bt_free(w->path);
out_dir:
	bt_free(w->dir);
out_free:
	bt_free(w);
out:
	return rc;
}

/* Mark the segment's durability unknown, for the failure rc: only a
 * rotation clears this. */
static void
writer_poison(struct log_writer *w, int rc)
{
	mutex_lock(&w->mu);
	w->stats.poison = rc;
	mutex_unlock(&w->mu);
}

/* The error an append or sync of a poisoned writer returns. */
static int
writer_poisoned(struct log_writer *w)
{
	return bt_error_set(BT_ECLOSED, "%s: a failed sync or write left the "
	    "segment's durability unknown (%s); appends are refused until "
	    "the log rotates", w->path, bt_strerror(w->stats.poison));
}

static int
writer_sync_file(struct log_writer *w)
{
	int rc;

	rc = env_file_sync(w->file);
	mutex_lock(&w->mu);
	w->stats.syncs++;
	if (rc < 0)
		w->stats.poison = rc;
	mutex_unlock(&w->mu);
	if (rc == 0)
		w->synced = w->offset;
	assert(w->marked <= w->synced && w->synced <= w->offset);	/* L2 */
	return rc;
}

/*
 * Finish the current segment and start the next one.  A
 * poisoned segment is abandoned without a sync: after a failed fdatasync
 * another one proves nothing.  If the new segment cannot be made, the
 * writer stays where it was.
 */
static int
writer_rotate(struct log_writer *w)
{
	struct env_file *f;
	uint64_t next = w->segment + 1, reserved, file_end;
	char *tmp;
	int rc;

	if (w->stats.poison == 0 && w->synced < w->offset &&
	    (rc = writer_sync_file(w)) < 0)
		return rc;
	log_segment_path(w->next_path, w->path_size, w->dir, next);
	if ((rc = segment_create(w->env, w->dir, w->next_path,
	    w->segment_size, w->headroom, &f, &reserved, &file_end)) < 0)
		return rc;
	segment_trim(w->file, w->offset, w->file_end);
	env_file_close(w->file);
	w->file = f;
	tmp = w->path;
	w->path = w->next_path;
	w->next_path = tmp;
	w->synced = LOG_SEGMENT_HEADER_SIZE;
	w->marked = LOG_SEGMENT_HEADER_SIZE;
	w->reserved = reserved;
	w->reserve_next = 0;
	w->file_end = file_end;
	w->zeroed = LOG_SEGMENT_HEADER_SIZE;
	mutex_lock(&w->mu);
	w->segment = next;
	w->offset = LOG_SEGMENT_HEADER_SIZE;
	w->stats.poison = 0;
	mutex_unlock(&w->mu);
	return 0;
}

/* Whether a batch of bytes (framed, before the synced field that its
 * first record may carry) would end the segment past max_file_size; a
 * segment that holds no record yet is not given up for a new one. */
static bool
writer_passes_max(const struct log_writer *w, size_t bytes)
{
	return w->max_file_size != 0 &&
	    w->offset > LOG_SEGMENT_HEADER_SIZE &&
	    w->offset + bytes + LOG_RECORD_SYNCED_SIZE > w->max_file_size;
}

/* The records of one append: log_records, or slices of one part each. */
struct record_list {
	const struct log_record *records;
	const struct slice *slices;
	size_t count;
};

static struct log_record
record_list_get(const struct record_list *l, size_t i)
{
	struct log_record r;

	if (l->records != NULL)
		return l->records[i];
	r.parts = &l->slices[i];
	r.count = 1;
	return r;
}

/* What an append writes, counted before it is framed. */
struct append_size {
	size_t bytes;		/* framed, before any synced field */
	size_t copied;		/* of those, what goes through the batch */
	size_t in_place;	/* parts written from where they are */
};

/* Append an in-place piece to w->pieces (room was made for it). */
static void
pieces_add(struct log_writer *w, size_t *n, const uint8_t *p, size_t len)
{
	if (len > 0)
		w->pieces[(*n)++] = slice_make(p, len);
}

/*
 * Frame record r at the end of w->batch (format.h), with the synced field
 * when synced is not 0.  Parts of LOG_PART_IN_PLACE bytes or more are not
 * copied: the batch bytes before each become a piece of w->pieces, the
 * part another, and *run the batch offset where the next batch piece
 * starts.  The record's CRC covers the parts where they are.  The bytes
 * the record takes.
 */
static size_t
record_frame(struct log_writer *w, struct log_record r, size_t payload,
    uint64_t synced, size_t *npieces, size_t *run)
{
	uint8_t *h = w->batch.p + w->batch.n;
	size_t head = LOG_RECORD_HEADER_SIZE;
	size_t checked = w->batch.n + 4;	/* batch bytes not in crc yet */
	uint32_t field = (uint32_t)payload, crc = 0;

	if (synced != 0) {
		field |= LOG_RECORD_SYNCED;
		put_fixed64(h + head, synced);
		head += LOG_RECORD_SYNCED_SIZE;
	}
	put_fixed32(h + 4, field);
	w->batch.n += head;
	for (size_t i = 0; i < r.count; i++) {
		struct slice part = r.parts[i];

		if (part.n >= LOG_PART_IN_PLACE) {
			crc = crc32c_extend(crc, w->batch.p + checked,
			    w->batch.n - checked);
			crc = crc32c_extend(crc, part.p, part.n);
			checked = w->batch.n;
			pieces_add(w, npieces, w->batch.p + *run,
			    w->batch.n - *run);
			pieces_add(w, npieces, part.p, part.n);
			*run = w->batch.n;
			continue;
		}
		if (part.n > 0)
			memcpy(w->batch.p + w->batch.n, part.p, part.n);
		w->batch.n += part.n;
	}
	crc = crc32c_extend(crc, w->batch.p + checked, w->batch.n - checked);
	put_fixed32(h, crc32c_mask(crc));
	return head + payload;
}

/*
 * Write the records of l as one batch (size: as append_sizes() counted
 * them), fdatasynced when sync is true: one env_file_write_at() of the
 * batch buffer, or, when parts are written in place, one
 * env_file_write_parts_at() of the batch's runs and those parts in order.
 * A failed write is cut off again so that the segment ends at its last
 * good record; if even that fails, the segment holds garbage and the
 * writer is poisoned.
 */
static int
writer_write(struct log_writer *w, const struct record_list *l,
    const struct append_size *size, const size_t *payloads, bool sync,
    struct log_position *positions)
{
	char saved[256];
	uint64_t mark, written = 0;
	size_t npieces = 0, run = 0;
	int rc;

	if (w->stats.poison < 0) {
		rc = writer_poisoned(w);
		goto out;
	}
	if ((w->offset >= w->segment_size ||
	    writer_passes_max(w, size->bytes)) &&
	    (rc = writer_rotate(w)) < 0)
		goto out;
	buf_clear(&w->batch);
	/* The first record after a sync says how far it reached. */
	mark = w->synced > w->marked ? w->synced : 0;
	if ((rc = buf_reserve(&w->batch, size->copied +
	    LOG_RECORD_SYNCED_SIZE)) < 0) {
		rc = bt_error_set(rc, "%s: no memory for a batch of %zu bytes",
		    w->path, size->copied);
		goto out;
	}
	for (size_t i = 0; i < l->count; i++) {
		if (positions != NULL) {
			positions[i].segment = w->segment;
			positions[i].offset = w->offset + written;
		}
		written += record_frame(w, record_list_get(l, i), payloads[i],
		    mark, &npieces, &run);
		mark = 0;
	}
	assert(w->batch.n <= size->copied + LOG_RECORD_SYNCED_SIZE);
	assert(written == w->batch.n + size->in_place);
	writer_reserve(w, w->offset + written);
	if (npieces == 0)
		rc = env_file_write_at(w->file, w->offset, w->batch.p,
		    w->batch.n);
	else {
		pieces_add(w, &npieces, w->batch.p + run, w->batch.n - run);
		rc = env_file_write_parts_at(w->file, w->offset, w->pieces,
		    npieces);
	}
	if (rc < 0) {
		snprintf(saved, sizeof(saved), "%s", bt_error_detail());
		if (env_file_truncate(w->file, w->offset) < 0)
			writer_poison(w, rc);
		w->reserved = w->file_end = w->zeroed = w->offset;
		rc = bt_error_set(rc, "%s", saved);
		goto out;
	}
	if (w->synced > w->marked)
		w->marked = w->synced;
	mutex_lock(&w->mu);
	w->offset += written;
	w->stats.records += l->count;
	w->stats.batches++;
	mutex_unlock(&w->mu);
	if (sync) {
		writer_zero_ahead(w, w->offset);
		rc = writer_sync_file(w);
	}
out:
	if (w->batch.cap > 4 * LOG_BATCH_MAX)
		buf_release(&w->batch);
	return rc;
}

/*
 * Check the records of l and count what writing them takes: each
 * record's payload into payloads[], the totals into *size, and room in
 * w->pieces for the in-place parts.  0, -EINVAL, BT_ETOOBIG or -ENOMEM.
 */
static int
append_sizes(struct log_writer *w, const struct record_list *l,
    size_t *payloads, struct append_size *size)
{
	size_t in_place_parts = 0, cap;
	struct slice *pieces;

	memset(size, 0, sizeof(*size));
	if (l->count == 0)
		return bt_error_set(-EINVAL, "%s: no log records", w->dir);
	for (size_t i = 0; i < l->count; i++) {
		struct log_record r = record_list_get(l, i);
		size_t n = 0;

		if (r.count == 0)
			return bt_error_set(-EINVAL, "%s: log record of no "
			    "parts", w->dir);
		for (size_t j = 0; j < r.count; j++) {
			if (r.parts[j].n > LOG_MAX_RECORD - n)
				return bt_error_set(BT_ETOOBIG, "%s: log "
				    "record exceeds %u bytes", w->dir,
				    LOG_MAX_RECORD);
			n += r.parts[j].n;
			if (r.parts[j].n >= LOG_PART_IN_PLACE) {
				size->in_place += r.parts[j].n;
				in_place_parts++;
			}
		}
		if (n == 0)
			return bt_error_set(-EINVAL, "%s: empty log record",
			    w->dir);
		if (size->bytes > SIZE_MAX / 2)
			return bt_error_set(BT_ETOOBIG, "%s: %zu log records "
			    "too big together", w->dir, l->count);
		size->bytes += LOG_RECORD_HEADER_SIZE + n;
		payloads[i] = n;
	}
	size->copied = size->bytes - size->in_place;
	/* Each in-place part and the batch run before it, and the last run. */
	cap = 2 * in_place_parts + 1;
	if (in_place_parts > 0 && cap > w->pieces_cap) {
		if ((pieces = bt_realloc(w->pieces, cap *
		    sizeof(*pieces))) == NULL)
			return bt_error_set(-ENOMEM, "%s: no memory for %zu "
			    "record parts", w->dir, cap);
		w->pieces = pieces;
		w->pieces_cap = cap;
	}
	return 0;
}

/* Payload sizes of this many records are counted on the stack. */
#define APPEND_STACK_RECORDS	64

static int
writer_append(struct log_writer *w, const struct record_list *l, bool sync,
    struct log_position *positions)
{
	size_t stack[APPEND_STACK_RECORDS], *payloads = stack;
	struct append_size size;
	int rc;

	appender_enter(w);
	if (l->count > APPEND_STACK_RECORDS &&
	    (payloads = bt_malloc(l->count * sizeof(*payloads))) == NULL) {
		rc = bt_error_set(-ENOMEM, "%s: no memory for %zu log "
		    "records", w->dir, l->count);
		goto out;
	}
	if ((rc = append_sizes(w, l, payloads, &size)) == 0)
		rc = writer_write(w, l, &size, payloads, sync, positions);
	if (payloads != stack)
		bt_free(payloads);
out:
	appender_leave(w);
	return rc;
}

int
log_writer_append_records(struct log_writer *w,
    const struct log_record *records, size_t count, bool sync,
    struct log_position *positions)
{
	struct record_list l = { records, NULL, count };

	return writer_append(w, &l, sync, positions);
}

int
log_writer_append_many(struct log_writer *w, const struct slice *records,
    size_t count, bool sync, struct log_position *positions)
{
	struct record_list l = { NULL, records, count };

	return writer_append(w, &l, sync, positions);
}

int
log_writer_append(struct log_writer *w, struct slice record, bool sync,
    struct log_position *pos)
{
	return log_writer_append_many(w, &record, 1, sync, pos);
}

/* Sync for the appender (L1) inside log_writer_sync() or _close(). */
static int
writer_sync(struct log_writer *w)
{
	if (w->stats.poison < 0)
		return writer_poisoned(w);
	if (w->synced >= w->offset)
		return 0;
	return writer_sync_file(w);
}

int
log_writer_sync(struct log_writer *w)
{
	int rc;

	appender_enter(w);
	rc = writer_sync(w);
	appender_leave(w);
	return rc;
}

int
log_writer_rotate(struct log_writer *w, uint64_t *next)
{
	int rc;

	appender_enter(w);
	if ((rc = writer_rotate(w)) == 0 && next != NULL)
		*next = w->segment;
	appender_leave(w);
	return rc;
}

int
log_writer_close(struct log_writer *w)
{
	int rc, crc;

	if (w == NULL)
		return 0;
	appender_enter(w);
	rc = writer_sync(w);
	segment_trim(w->file, w->offset, w->file_end);
	if ((crc = env_file_close(w->file)) < 0 && rc == 0)
		rc = crc;
	buf_release(&w->batch);
	bt_free(w->pieces);
	bt_free(w->zeros);
	mutex_destroy(&w->mu);
	bt_free(w->next_path);
	bt_free(w->path);
	bt_free(w->dir);
	bt_free(w);
	return rc;
}

/*
 * A segment past its size is rotated before the next batch is written, so
 * that batch's first record will be at the start of the next segment.
 */
struct log_position
log_writer_position(struct log_writer *w)
{
	struct log_position pos;

	mutex_lock(&w->mu);
	pos.segment = w->segment;
	pos.offset = w->offset;
	if (pos.offset >= w->segment_size) {
		pos.segment++;
		pos.offset = LOG_SEGMENT_HEADER_SIZE;
	}
	mutex_unlock(&w->mu);
	return pos;
}

void
log_writer_get_stats(struct log_writer *w, struct log_writer_stats *out)
{
	mutex_lock(&w->mu);
	*out = w->stats;
	mutex_unlock(&w->mu);
}

struct segment_list {
	uint64_t *v;
	size_t n, cap;
};

/* dir_list callback: keep names of the form NNNNNNNNNNNNNNNN.log. */
static int
segment_list_add(void *arg, const char *name)
{
	struct segment_list *l = arg;
	uint64_t n = 0, *v;
	size_t i, cap;

	if (strlen(name) != 20 || strcmp(name + 16, ".log") != 0)
		return 0;
	for (i = 0; i < 16; i++) {
		if (name[i] < '0' || name[i] > '9')
			return 0;
		n = n * 10 + (uint64_t)(name[i] - '0');
	}
	if (l->n == l->cap) {
		cap = l->cap ? l->cap * 2 : 16;
		if ((v = bt_realloc(l->v, cap * sizeof(*v))) == NULL)
			return -ENOMEM;
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n++] = n;
	return 0;
}

static int
segment_compare(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

int
log_list_segments(struct env *env, const char *dir, uint64_t **segments,
    size_t *count)
{
	struct segment_list l = { NULL, 0, 0 };
	int rc;

	if ((rc = env_dir_list(env, dir, segment_list_add, &l)) != 0) {
		bt_free(l.v);
		if (rc == -ENOMEM)
			rc = bt_error_set(rc, "%s: no memory to list segments",
			    dir);
		return rc;
	}
	if (l.n > 1)
		qsort(l.v, l.n, sizeof(*l.v), segment_compare);
	*segments = l.v;
	*count = l.n;
	return 0;
}
