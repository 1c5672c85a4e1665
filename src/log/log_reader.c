/*
 * log_reader.c - reading a commit log segment back for replay.
 *
 * The segment is streamed through a window of at least READER_CHUNK bytes
 * (or one whole record, if bigger), so a 64 MiB segment is never read
 * into memory at once.
 *
 * A version 3 segment may end in zeros where the writer had reserved
 * space; that is its end, not a tear.
 *
 * Damage is classified as format.h says: a record that runs past the end
 * of the file, or whose check fails while only zero bytes follow it (or
 * nothing: it ends exactly at the end), is a torn tail and is dropped.
 * One more test keeps a torn tail from hiding real damage: if a valid
 * record starts anywhere after the damaged one, the damaged one was not
 * the last write, so it is corruption.  That is what catches a flipped
 * length field, which would otherwise look like a record running past the
 * end and silently drop every record after it.  And one test keeps a
 * power loss from looking like corruption: in the last segment, damage
 * that no later record's synced field covers was never synced (the disk
 * wrote unsynced pages out of order), so the segment is torn there.
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "log/format.h"
#include "log/log.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/coding.h"
#include "util/crc32c.h"
#include "util/error.h"

#define READER_CHUNK		(256u << 10)
/* A window grown this big for one record is given back afterwards. */
#define READER_WINDOW_KEEP	(16u << 20)

struct log_reader {
	struct env_file *file;
	uint64_t size;		/* taken at open */
	uint64_t pos;		/* the next record's offset */
	struct buf win;		/* file bytes [win_off, win_off + win.n) */
	uint64_t win_off;
	int state;		/* 0 while reading, then BT_DONE or an error */
	uint32_t version;	/* of the segment's format */
	bool sealed;		/* synced whole: damage is never torn */
	bool reading;		/* log_reader_next() was called */
	bool damaged;		/* state is damage at bad_pos */
	uint64_t bad_pos;
	uint64_t dropped;
	uint64_t dropped_records;	/* intact ones in the dropped bytes */
	char detail[256];	/* of the sticky error */
};

/*
 * Borrow bytes [off, off + n) of the file (within its size) through the
 * window, reading what the window lacks.  The pointer is valid until the
 * next call.
 */
static int
reader_fill(struct log_reader *r, uint64_t off, size_t n, const uint8_t **out)
{
	uint64_t want = n > READER_CHUNK ? n : READER_CHUNK;
	size_t keep = 0;
	int rc;

	assert(off <= r->size && n <= r->size - off);
	if (off >= r->win_off && off + n <= r->win_off + r->win.n) {
		*out = r->win.p + (off - r->win_off);
		return 0;
	}
	if (want > r->size - off)
		want = r->size - off;
	if (r->win.cap > READER_WINDOW_KEEP && want < r->win.cap / 4)
		buf_release(&r->win);
	else if (off >= r->win_off && off < r->win_off + r->win.n) {
		keep = (size_t)(r->win_off + r->win.n - off);
		memmove(r->win.p, r->win.p + (off - r->win_off), keep);
	}
	r->win.n = keep;
	r->win_off = off;
	if ((rc = buf_reserve(&r->win, (size_t)want - keep)) < 0)
		return bt_error_set(rc, "%s: no memory to read %" PRIu64
		    " bytes at offset %" PRIu64, r->file->path, want, off);
	if ((rc = env_file_read_exact(r->file, off + keep, r->win.p + keep,
	    (size_t)want - keep)) < 0) {
		r->win.n = 0;
		return rc;
	}
	r->win.n = (size_t)want;
	*out = r->win.p;
	return 0;
}

static bool
bytes_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != 0)
			return false;
	return true;
}

/* Whether every byte of [from, size) is zero. */
static int
reader_zero_to_end(struct log_reader *r, uint64_t from, bool *zero)
{
	const uint8_t *p;
	uint64_t off;
	size_t n;
	int rc;

	for (off = from; off < r->size; off += n) {
		n = r->size - off < READER_CHUNK ?
		    (size_t)(r->size - off) : READER_CHUNK;
		if ((rc = reader_fill(r, off, n, &p)) < 0)
			return rc;
		if (!bytes_zero(p, n)) {
			*zero = false;
			return 0;
		}
	}
	*zero = true;
	return 0;
}

/* A record's framing, from its length field. */
struct frame {
	uint32_t len;		/* payload bytes */
	size_t head;		/* bytes before the payload */
	bool has_synced;	/* the synced field is there */
};

/* Decode a length field; false if no record can have it. */
static bool
frame_parse(const struct log_reader *r, uint32_t field, struct frame *f)
{
	f->has_synced = r->version >= 2 && (field & LOG_RECORD_SYNCED);
	f->len = f->has_synced ? field & ~LOG_RECORD_SYNCED : field;
	f->head = LOG_RECORD_HEADER_SIZE +
	    (f->has_synced ? LOG_RECORD_SYNCED_SIZE : 0);
	return f->len != 0 && f->len <= LOG_MAX_RECORD;
}

static bool
record_check(const uint8_t *rec, const struct frame *f)
{
	uint32_t crc = crc32c_value(rec + 4, f->head - 4 + f->len);

	return crc32c_unmask(get_fixed32(rec)) == crc;
}

/* The synced field of a checked record, or 0. */
static uint64_t
record_synced(const uint8_t *rec, const struct frame *f)
{
	return f->has_synced ? get_fixed64(rec + LOG_RECORD_HEADER_SIZE) : 0;
}

/*
 * The offset of the first valid record starting at or after from, or
 * r->size when there is none; *end (may be NULL) receives where it ends
 * and *synced (may be NULL) its synced field.
 */
static int
reader_find_record(struct log_reader *r, uint64_t from, uint64_t *found,
    uint64_t *end, uint64_t *synced)
{
	const uint8_t *p;
	struct frame f;
	uint64_t q;
	int rc;

	for (q = from; q + LOG_RECORD_HEADER_SIZE <= r->size; q++) {
		if ((rc = reader_fill(r, q, LOG_RECORD_HEADER_SIZE, &p)) < 0)
			return rc;
		if (!frame_parse(r, get_fixed32(p + 4), &f) ||
		    f.head + f.len > r->size - q)
			continue;
		if ((rc = reader_fill(r, q, f.head + f.len, &p)) < 0)
			return rc;
		if (record_check(p, &f)) {
			*found = q;
			if (end != NULL)
				*end = q + f.head + f.len;
			if (synced != NULL)
				*synced = record_synced(p, &f);
			return 0;
		}
	}
	*found = r->size;
	return 0;
}

/*
 * Whether a valid record after pos shows that pos had been synced; if
 * not, *intact receives how many valid records follow pos.
 */
static int
reader_synced_past(struct log_reader *r, uint64_t pos, bool *covered,
    uint64_t *intact)
{
	uint64_t from = pos + 1, found, end, synced;
	int rc;

	*covered = false;
	*intact = 0;
	for (;; (*intact)++) {
		if ((rc = reader_find_record(r, from, &found, &end,
		    &synced)) < 0)
			return rc;
		if (found == r->size)
			return 0;
		if (synced > pos) {
			*covered = true;
			return 0;
		}
		from = end;
	}
}

/* Stop with an error that every later call repeats. */
static int
reader_fail(struct log_reader *r, int rc)
{
	r->state = rc;
	snprintf(r->detail, sizeof(r->detail), "%s", bt_error_detail());
	return rc;
}

/* Stop at the end, dropping [pos, size) as a torn tail. */
static int
reader_torn(struct log_reader *r, uint64_t pos)
{
	r->dropped = r->size - pos;
	r->pos = r->size;
	r->state = BT_DONE;
	return BT_DONE;
}

/*
 * Damage at pos that a torn tail cannot explain, its error rc already
 * set: corruption -- unless the segment is the one written last and no
 * later record shows pos synced, when a power loss explains it.
 */
static int
reader_damaged(struct log_reader *r, uint64_t pos, int rc)
{
	char detail[sizeof(r->detail)];
	uint64_t intact;
	bool covered;
	int frc;

	if (!r->sealed) {
		snprintf(detail, sizeof(detail), "%s", bt_error_detail());
		if ((frc = reader_synced_past(r, pos, &covered,
		    &intact)) < 0)
			return reader_fail(r, frc);
		if (!covered) {
			r->dropped_records = intact;
			return reader_torn(r, pos);
		}
		bt_error_set(rc, "%s", detail);
	}
	r->damaged = true;
	r->bad_pos = pos;
	return reader_fail(r, rc);
}

/*
 * The record at pos fails in a way a torn tail could explain: it is one
 * unless a valid record follows it, which proves the damage is not at the
 * end of what was written.
 */
static int
reader_maybe_torn(struct log_reader *r, uint64_t pos, int rc,
    const char *what)
{
	uint64_t next;
	int frc;

	if ((frc = reader_find_record(r, pos + 1, &next, NULL, NULL)) < 0)
		return reader_fail(r, frc);
	if (next == r->size)
		return reader_torn(r, pos);
	return reader_damaged(r, pos, bt_error_set(rc, "%s: %s at offset %"
	    PRIu64 " (a valid record follows at offset %" PRIu64 ")",
	    r->file->path, what, pos, next));
}

int
log_reader_next(struct log_reader *r, struct slice *record,
    uint64_t *offset)
{
	const uint8_t *p;
	uint64_t pos = r->pos, left = r->size - r->pos;
	struct frame f;
	uint32_t field;
	size_t head;
	bool zero, valid;
	int rc;

	r->reading = true;
	if (r->state != 0) {
		if (r->state < 0)
			bt_error_set(r->state, "%s", r->detail);
		return r->state;
	}
	if (left == 0) {
		r->state = BT_DONE;
		return BT_DONE;
	}
	head = left < LOG_RECORD_HEADER_SIZE ? (size_t)left :
	    LOG_RECORD_HEADER_SIZE;
	if ((rc = reader_fill(r, pos, head, &p)) < 0)
		return reader_fail(r, rc);
	if (r->version >= 3 && bytes_zero(p, head)) {
		if ((rc = reader_zero_to_end(r, pos + head, &zero)) < 0)
			return reader_fail(r, rc);
		if (zero) {
			/* The space reserved past the last record. */
			r->state = BT_DONE;
			return BT_DONE;
		}
	}
	if (head < LOG_RECORD_HEADER_SIZE)
		return reader_torn(r, pos);
	field = get_fixed32(p + 4);
	if (field == 0) {
		if ((rc = reader_zero_to_end(r, pos + LOG_RECORD_HEADER_SIZE,
		    &zero)) < 0)
			return reader_fail(r, rc);
		if (zero)
			return reader_torn(r, pos);
		return reader_damaged(r, pos, bt_error_set(BT_ECORRUPT,
		    "%s: record of length 0 at offset %" PRIu64,
		    r->file->path, pos));
	}
	valid = frame_parse(r, field, &f);
	if (f.head > left || f.len > left - f.head)
		return reader_maybe_torn(r, pos, BT_ECORRUPT,
		    "record runs past the end of the file");
	if (!valid)
		return reader_damaged(r, pos, bt_error_set(BT_ECORRUPT,
		    "%s: bad record length %" PRIu32 " at offset %" PRIu64,
		    r->file->path, field, pos));
	if ((rc = reader_fill(r, pos, f.head + f.len, &p)) < 0)
		return reader_fail(r, rc);
	if (record_check(p, &f)) {
		r->pos = pos + f.head + f.len;
		*record = slice_make(p + f.head, f.len);
		if (offset != NULL)
			*offset = pos;
		return 0;
	}
	if ((rc = reader_zero_to_end(r, pos + f.head + f.len, &zero)) < 0)
		return reader_fail(r, rc);
	if (zero)
		return reader_maybe_torn(r, pos, BT_ECHECKSUM,
		    "checksum mismatch in record");
	return reader_damaged(r, pos, bt_error_set(BT_ECHECKSUM,
	    "%s: checksum mismatch in record at offset %" PRIu64,
	    r->file->path, pos));
}

/*
 * Damage in the segment header, its error rc already set.  The writer
 * syncs the header when it creates the segment, so this is never a power
 * loss's tear but damage at offset 0, reported by the first
 * log_reader_next and skipped by log_reader_skip_damage like any other:
 * the records after it may be whole.  They are read with the newest
 * framing, which reads the older versions' as well.
 */
static int
reader_header_damaged(struct log_reader *r, int rc)
{
	r->version = LOG_FORMAT_VERSION;
	r->damaged = true;
	r->bad_pos = 0;
	reader_fail(r, rc);
	return 0;
}

/*
 * Check the segment header.  A segment shorter than its header that holds
 * a prefix of the header or zeros (a crash while it was being created),
 * and an all-zero segment, are torn: the reader is then at its end.  A
 * version this code does not know, under a good checksum, is an error.
 */
static int
reader_check_header(struct log_reader *r)
{
	uint8_t want[LOG_SEGMENT_HEADER_SIZE];
	const uint8_t *p;
	uint32_t version;
	size_t n;
	bool zero;
	int rc;

	put_fixed64(want, LOG_MAGIC);
	put_fixed32(want + 8, LOG_FORMAT_VERSION);
	put_fixed32(want + 12, crc32c_mask(crc32c_value(want, 12)));
	n = r->size < sizeof(want) ? (size_t)r->size : sizeof(want);
	if (n == 0)
		return reader_torn(r, 0);
	if ((rc = reader_fill(r, 0, n, &p)) < 0)
		return rc;
	if (n < sizeof(want)) {
		/* Only a current writer can have been cut short. */
		if (memcmp(p, want, n) == 0)
			return reader_torn(r, 0);
		if ((rc = reader_zero_to_end(r, 0, &zero)) < 0)
			return rc;
		if (zero)
			return reader_torn(r, 0);
		return reader_header_damaged(r, bt_error_set(BT_ECORRUPT,
		    "%s: not a log segment (%zu bytes) at offset 0",
		    r->file->path, n));
	}
	if (get_fixed64(p) != LOG_MAGIC) {
		if ((rc = reader_zero_to_end(r, 0, &zero)) < 0)
			return rc;
		if (zero)
			return reader_torn(r, 0);
		return reader_header_damaged(r, bt_error_set(BT_ECORRUPT,
		    "%s: bad log magic at offset 0", r->file->path));
	}
	if (crc32c_unmask(get_fixed32(p + 12)) != crc32c_value(p, 12))
		return reader_header_damaged(r, bt_error_set(BT_ECHECKSUM,
		    "%s: segment header checksum mismatch at offset 0",
		    r->file->path));
	version = get_fixed32(p + 8);
	if (version < LOG_FORMAT_VERSION_MIN || version > LOG_FORMAT_VERSION)
		return bt_error_set(BT_EFORMAT, "%s: log format version %" PRIu32
		    " unsupported at offset 8", r->file->path, version);
	r->version = version;
	r->pos = LOG_SEGMENT_HEADER_SIZE;
	return 0;
}

int
log_reader_open(struct env *env, const char *path, struct log_reader **out)
{
	struct log_reader *r;
	int rc;

	if ((r = bt_calloc(1, sizeof(*r))) == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	buf_init(&r->win);
	if ((rc = env_file_open(env, path, ENV_READ, &r->file)) < 0)
		goto out_free;
	if ((rc = env_file_size(r->file, &r->size)) < 0)
		goto out_close;
	if ((rc = reader_check_header(r)) < 0)
		goto out_close;
	*out = r;
	return 0;
out_close:
	env_file_close(r->file);
	buf_release(&r->win);
out_free:
	bt_free(r);
out:
	return rc;
}

void
log_reader_close(struct log_reader *r)
{
	if (r == NULL)
		return;
	env_file_close(r->file);
	buf_release(&r->win);
	bt_free(r);
}

/* Seeking starts afresh: an earlier error or end is forgotten. */
int
log_reader_seek(struct log_reader *r, uint64_t offset)
{
	if (offset < LOG_SEGMENT_HEADER_SIZE || offset > r->size)
		return bt_error_set(-EINVAL, "%s: cannot seek to offset %"
		    PRIu64 " of %" PRIu64 " bytes", r->file->path, offset,
		    r->size);
	r->pos = offset;
	r->state = 0;
	r->damaged = false;
	r->dropped = 0;
	r->dropped_records = 0;
	return 0;
}

uint64_t
log_reader_dropped_bytes(struct log_reader *r)
{
	return r->dropped;
}

uint64_t
log_reader_dropped_records(struct log_reader *r)
{
	return r->dropped_records;
}

/*
 * Resynchronise after damage: the next offset past the damaged record
 * where a whole record checks (its header and crc32c over length, synced
 * field and payload; a false match is about 2^-32 per offset tried).
 */
int
log_reader_skip_damage(struct log_reader *r, uint64_t *offset,
    uint64_t *bytes)
{
	uint64_t next;
	int rc;

	if (!r->damaged || (r->state != BT_ECHECKSUM &&
	    r->state != BT_ECORRUPT))
		return bt_error_set(-EINVAL, "%s: no damage to skip",
		    r->file->path);
	if ((rc = reader_find_record(r, r->bad_pos + 1, &next, NULL,
	    NULL)) < 0)
		return rc;
	*offset = r->bad_pos;
	*bytes = next - r->bad_pos;
	r->pos = next;
	r->state = 0;
	r->damaged = false;
	return 0;
}

void
log_reader_set_sealed(struct log_reader *r)
{
	assert(!r->reading);	/* log.h: before the first record is read */
	r->sealed = true;
}
