/* cells.c - resolve internal entries into a row's visible cells (cells.h). */
#include <errno.h>
#include <string.h>

#include "tablet/cells.h"
#include "tablet/ikey.h"
#include "util/alloc.h"
#include "util/coding.h"
#include "util/error.h"

/* Where a cell's parts sit in cells_row.bytes (offsets survive growth). */
struct cell_span {
	size_t family_off, family_len;
	size_t qualifier_off, qualifier_len;
	size_t value_off, value_len;
	const uint8_t *value_lent;	/* or NULL: the value is in bytes */
	int64_t ts;
	uint64_t value_size;
};

/* The state of one pass over a row. */
struct resolver {
	uint64_t row_delete_seq;
	uint64_t family_delete_seq;
	uint64_t column_delete_seq;
	bool family_entered;
	bool family_known;		/* the current family is in the schema */
	const struct gc_policy *policy;
	uint64_t family_created_seq;
	bool column_started;
	uint64_t version_index;		/* versions seen in the current column */
	uint32_t emitted;		/* cells returned from the column */
	bool have_last_ts;
	int64_t last_ts;
	bool column_selected;
	bool spans_shared;		/* last span holds this column's names */
	bool column_over;		/* the column said COLUMN_DONE once */
	bool slots_free;		/* the policy ignores version counts */
	bool point;			/* may stop past the selected columns */
	uint32_t too_new;		/* versions after max_ts stepped over */
	bool family_checked;		/* family_matches holds for it */
	bool family_matches;		/* the family regex's answer */
	uint32_t row_passed;		/* cells past every filter but the
					   row's offset and limit */
	uint32_t row_emitted;		/* cells returned from the row */
	bool row_full;			/* the row has its limit */
};

void
cells_row_init(struct cells_row *r)
{
	buf_init(&r->key);
	buf_init(&r->bytes);
	buf_init(&r->scratch);
	buf_init(&r->cur_family);
	buf_init(&r->cur_qualifier);
	buf_init(&r->row_prefix);
	buf_init(&r->seek_key);
	r->spans = NULL;
	r->count = 0;
	r->cap = 0;
	r->lend_values = false;
	r->pin_epoch = 0;
}

void
cells_row_release(struct cells_row *r)
{
	buf_release(&r->key);
	buf_release(&r->bytes);
	buf_release(&r->scratch);
	buf_release(&r->cur_family);
	buf_release(&r->cur_qualifier);
	buf_release(&r->row_prefix);
	buf_release(&r->seek_key);
	bt_free(r->spans);
	cells_row_init(r);
}

size_t
cells_row_memory(const struct cells_row *r)
{
	return r->key.cap + r->bytes.cap + r->scratch.cap +
	    r->cur_family.cap + r->cur_qualifier.cap + r->row_prefix.cap +
	    r->seek_key.cap + r->cap * sizeof(*r->spans);
}

void
cells_row_get(const struct cells_row *r, size_t i, struct cell *out)
{
	const struct cell_span *s = &r->spans[i];

	out->family = slice_make(r->bytes.p + s->family_off, s->family_len);
	out->qualifier = slice_make(r->bytes.p + s->qualifier_off,
	    s->qualifier_len);
	out->value = slice_make(s->value_lent != NULL ? s->value_lent :
	    r->bytes.p + s->value_off, s->value_len);
	out->ts = s->ts;
	out->value_size = s->value_size;
}

uint8_t *
cells_row_take_bytes(struct cells_row *r)
{
	uint8_t *p = r->bytes.p;

	for (size_t i = 0; i < r->count; i++)
		if (r->spans[i].value_lent != NULL)
			return NULL;
	buf_init(&r->bytes);
	r->count = 0;
	return p;
}

/* Whether f's columns select (family, qualifier): 1, 0, or a regex's
 * error. */
static int
filter_selects(const struct cells_filter *f, struct slice family,
    struct slice qualifier)
{
	int rc;

	if (f->columns == NULL)
		return 1;
	for (size_t i = 0; i < f->column_count; i++) {
		const struct cells_column *c = &f->columns[i];

		if (!slice_equal(c->family, family))
			continue;
		if (!c->has_qualifier)
			return 1;
		if (c->qualifier_regex == NULL) {
			if (slice_equal(c->qualifier, qualifier))
				return 1;
		} else if ((rc = regex_match(c->qualifier_regex,
		    qualifier)) != 0) {
			return rc;
		}
	}
	return 0;
}

/*
 * Whether f selects no column after (family, qualifier), in key order
 * (the byte order of family names, then of qualifiers).
 */
static bool
filter_passed(const struct cells_filter *f, struct slice family,
    struct slice qualifier)
{
	if (f->columns == NULL)
		return false;
	for (size_t i = 0; i < f->column_count; i++) {
		const struct cells_column *c = &f->columns[i];
		int fc = slice_compare(family, c->family);

		if (fc < 0 || (fc == 0 && (!c->has_qualifier ||
		    c->qualifier_regex != NULL ||
		    slice_compare(qualifier, c->qualifier) < 0)))
			return false;
	}
	return true;
}

/* slice_equal() for the short names of families and qualifiers, without
 * a call for the usual few bytes. */
static inline bool
names_equal(struct slice a, struct slice b)
{
	if (a.n != b.n)
		return false;
	if (a.n > 16)
		return memcmp(a.p, b.p, a.n) == 0;
	for (size_t i = 0; i < a.n; i++)
		if (a.p[i] != b.p[i])
			return false;
	return true;
}

/* Enter family (if it is not the current one): reset family state. */
static int
enter_family(struct cells_row *r, struct resolver *st,
    const struct cells_schema *schema, struct slice family)
{
	struct cells_family_memo *memo = schema->memo;
	bool same = names_equal(buf_slice(&r->cur_family), family);
	int rc;

	if (st->family_entered && same)
		return 0;
	/* cur_family outlives rows: the next row often has the same. */
	if (!same && (rc = buf_set(&r->cur_family, family.p, family.n)) < 0)
		return rc;
	st->family_entered = true;
	st->family_delete_seq = 0;
	st->column_started = false;
	st->family_checked = false;
	if (memo != NULL && memo->valid && names_equal(slice_make(
	    memo->family, memo->family_len), family)) {
		st->family_known = memo->known;
		st->policy = memo->policy;
		st->family_created_seq = memo->created_seq;
		st->slots_free = memo->slots_free;
		return 0;
	}
	st->policy = NULL;
	st->family_created_seq = 0;
	st->family_known = schema->family_policy(schema->arg, family,
	    &st->policy, &st->family_created_seq);
	st->slots_free = st->policy == NULL || gc_policy_keeps_all(st->policy);
	if (memo != NULL && family.n <= CELLS_MEMO_FAMILY_MAX) {
		memo->valid = true;
		memo->known = st->family_known;
		memo->policy = st->policy;
		memo->created_seq = st->family_created_seq;
		memo->slots_free = st->slots_free;
		memo->family_len = (uint8_t)family.n;
		if (family.n > 0)
			memcpy(memo->family, family.p, family.n);
	}
	return 0;
}

/* Enter column (family already entered): reset column state. */
static int
enter_column(struct cells_row *r, struct resolver *st,
    const struct cells_filter *f, struct slice qualifier)
{
	bool same = names_equal(buf_slice(&r->cur_qualifier), qualifier);
	int rc;

	if (st->column_started && same)
		return 0;
	if (!same &&
	    (rc = buf_set(&r->cur_qualifier, qualifier.p, qualifier.n)) < 0)
		return rc;
	st->column_started = true;
	st->column_delete_seq = 0;
	st->version_index = 0;
	st->emitted = 0;
	st->have_last_ts = false;
	st->spans_shared = false;
	st->column_over = false;
	st->too_new = 0;
	st->column_selected = st->family_known;
	if (st->column_selected) {
		if ((rc = filter_selects(f, buf_slice(&r->cur_family),
		    qualifier)) < 0)
			return rc;
		st->column_selected = rc == 1;
	}
	if (st->column_selected && f->family_regex != NULL) {
		if (!st->family_checked) {
			if ((rc = regex_match(f->family_regex,
			    buf_slice(&r->cur_family))) < 0)
				return rc;
			st->family_matches = rc == 1;
			st->family_checked = true;
		}
		st->column_selected = st->family_matches;
	}
	if (st->column_selected && f->qualifier_regex != NULL) {
		if ((rc = regex_match(f->qualifier_regex, qualifier)) < 0)
			return rc;
		st->column_selected = rc == 1;
	}
	return 0;
}

/* buf_reserve() with the usual case, room already there, inline. */
static inline int
room_for(struct buf *b, size_t extra)
{
	return extra <= b->cap - b->n ? 0 : buf_reserve(b, extra);
}

/* Append n bytes to b, which has room for them. */
static inline void
bytes_put(struct buf *b, const void *p, size_t n)
{
	if (n > 0)
		memcpy(b->p + b->n, p, n);
	b->n += n;
}

/* Room in r->spans for one more cell. */
static inline int
spans_room(struct cells_row *r)
{
	size_t cap;
	struct cell_span *n;

	if (r->count < r->cap)
		return 0;
	cap = r->cap ? r->cap * 2 : 16;
	if ((n = bt_realloc(r->spans, cap * sizeof(*n))) == NULL)
		return -ENOMEM;
	r->spans = n;
	r->cap = cap;
	return 0;
}

int
cells_row_start(struct cells_row *r, struct slice key)
{
	int rc;

	if ((rc = buf_set(&r->key, key.p, key.n)) < 0 ||
	    (rc = buf_reserve(&r->key, 1)) < 0)
		return rc;
	r->key.p[r->key.n] = '\0';
	r->bytes.n = 0;
	r->count = 0;
	return 0;
}

int
cells_row_add(struct cells_row *r, const struct cell *c)
{
	struct cell_span *s;
	int rc;

	if ((rc = spans_room(r)) < 0)
		return rc;
	if ((rc = room_for(&r->bytes, c->family.n + c->qualifier.n +
	    c->value.n + 2)) < 0)
		return rc;
	s = &r->spans[r->count];
	s->family_off = r->bytes.n;
	s->family_len = c->family.n;
	bytes_put(&r->bytes, c->family.p, c->family.n);
	r->bytes.p[r->bytes.n++] = '\0';
	s->qualifier_off = r->bytes.n;
	s->qualifier_len = c->qualifier.n;
	bytes_put(&r->bytes, c->qualifier.p, c->qualifier.n);
	s->value_lent = NULL;
	s->value_off = r->bytes.n;
	s->value_len = c->value.n;
	bytes_put(&r->bytes, c->value.p, c->value.n);
	r->bytes.p[r->bytes.n++] = '\0';
	s->ts = c->ts;
	s->value_size = c->value_size;
	r->count++;
	return 0;
}

/* Add a cell; its value is copied unless lend (value is pinned). */
static int
emit(struct cells_row *r, struct resolver *st, int64_t ts,
    struct slice value, bool keys_only, bool lend)
{
	uint64_t value_size = value.n;
	struct cell_span *s;
	int rc;

	if ((rc = spans_room(r)) < 0)
		return rc;
	s = &r->spans[r->count];
	if (st->spans_shared) {
		*s = r->spans[r->count - 1];
	} else {
		if ((rc = room_for(&r->bytes, r->cur_family.n + 1 +
		    r->cur_qualifier.n)) < 0)
			return rc;
		s->family_off = r->bytes.n;
		s->family_len = r->cur_family.n;
		bytes_put(&r->bytes, r->cur_family.p, r->cur_family.n);
		r->bytes.p[r->bytes.n++] = '\0';
		s->qualifier_off = r->bytes.n;
		s->qualifier_len = r->cur_qualifier.n;
		bytes_put(&r->bytes, r->cur_qualifier.p, r->cur_qualifier.n);
		st->spans_shared = true;
	}
	if (keys_only)
		value.n = 0;
	s->ts = ts;
	s->value_size = value_size;
	if (lend) {
		s->value_lent = value.p;
		s->value_off = 0;
		s->value_len = value.n;
		r->count++;
		return 0;
	}
	if ((rc = room_for(&r->bytes, value.n + 1)) < 0)
		return rc;
	s->value_lent = NULL;
	s->value_off = r->bytes.n;
	s->value_len = value.n;
	bytes_put(&r->bytes, value.p, value.n);
	r->bytes.p[r->bytes.n++] = '\0';
	r->count++;
	return 0;
}

/* What the rules make of one version entry. */
enum verdict {
	VERDICT_HIDDEN,		/* masked or shadowed: gone */
	VERDICT_CONDEMNED,	/* a version condemned by GC: gone, and so
				 * is every later version of the column */
	VERDICT_DELETED,	/* a version delete: no version */
	VERDICT_VERSION,	/* a live version */
};

/*
 * Judge one version entry (put or version delete) of the current column by
 * the delete and GC rules of cells.h; filters are the caller's business.
 * Later entries of a column have older timestamps and deeper indexes,
 * and every GC rule condemns more the older and deeper a version is
 * (gc_policy.c), so once a version is condemned every later one is too.
 */
static enum verdict
judge_version(struct resolver *st, const struct ikey *k, int64_t now)
{
	uint64_t mask = st->row_delete_seq;
	uint64_t index;

	if (st->family_delete_seq > mask)
		mask = st->family_delete_seq;
	if (st->column_delete_seq > mask)
		mask = st->column_delete_seq;
	/* Only the newest visible entry of a timestamp decides. */
	if (st->have_last_ts && st->last_ts == k->ts)
		return VERDICT_HIDDEN;
	st->have_last_ts = true;
	st->last_ts = k->ts;
	if (k->seq < mask || !st->family_known ||
	    k->seq < st->family_created_seq)
		return VERDICT_HIDDEN;
	if (k->kind != IKEY_PUT)
		return VERDICT_DELETED;
	index = st->version_index++;
	if (st->policy != NULL &&
	    gc_policy_condemns(st->policy, index, k->ts, now))
		return VERDICT_CONDEMNED;
	return VERDICT_VERSION;
}

/* Whether value passes f's value filters: 1, 0, or a regex's error. */
static int
value_passes(const struct cells_filter *f, struct slice value)
{
	if (f->has_value_start && slice_compare(value, f->value_start) < 0)
		return 0;
	if (f->has_value_end && slice_compare(value, f->value_end) >= 0)
		return 0;
	if (f->value_regex != NULL)
		return regex_match(f->value_regex, value);
	return 1;
}

/*
 * The smallest value lent rather than copied when the row lends: below
 * it a copy costs fewer instructions than pinning the block that holds
 * it (bench/figures.md).
 */
#define CELLS_LEND_MIN	256

/* A version_fn's answer: nothing more of this column can be returned. */
#define COLUMN_DONE 1
/* Or: every version of the column from here to max_ts can be passed over
 * undecoded (none is returned and none counts against the policy). */
#define COLUMN_TOO_NEW 2
/* Entries a skip steps over before it seeks instead: most columns hold a
 * few, and a seek costs one per source, but a column of many (or large)
 * versions is passed in one seek, its blocks unread. */
#define SKIP_STEPS 4

/*
 * One version entry of a read: judge it, then apply the filters.  0,
 * COLUMN_DONE when no later entry of the column can be returned (the
 * column is not selected, it has its cells_per_column, its versions are now
 * condemned, or versions are now older than min_ts: later entries have
 * older timestamps, and the markers that could mask them came before), or
 * -ENOMEM.  Without these answers a read of the newest version would
 * judge every older version of its column, each condemned in turn.
 */
static int
read_version(struct cells_row *r, struct resolver *st, const struct ikey *k,
    struct iter *it, int64_t now, const struct cells_filter *f)
{
	struct slice value;
	bool lend = false;
	int rc;

	if (!st->column_selected || k->ts < f->min_ts || st->row_full ||
	    (f->cells_per_column != 0 && st->emitted >= f->cells_per_column))
		return COLUMN_DONE;
	if (f->has_max_ts && k->ts > f->max_ts && st->slots_free &&
	    !st->have_last_ts)
		return COLUMN_TOO_NEW;
	switch (judge_version(st, k, now)) {
	case VERDICT_CONDEMNED:
		if (!f->with_condemned)
			return COLUMN_DONE;
		break;
	case VERDICT_VERSION:
		break;
	default:
		return 0;
	}
	if (f->has_max_ts && k->ts > f->max_ts)
		return 0;
	value = iter_value(it);
	if (cells_filter_on_values(f) && (rc = value_passes(f, value)) <= 0)
		return rc;
	st->emitted++;
	/* Cells per row come last: an offset skips cells that every other
	 * filter passed, each counted against its column's limit. */
	if (st->row_passed++ < f->cells_per_row_offset)
		return f->cells_per_column != 0 &&
		    st->emitted >= f->cells_per_column ? COLUMN_DONE : 0;
	if (value.n >= CELLS_LEND_MIN && r->lend_values && !f->keys_only) {
		if ((rc = iter_pin(it, r->pin_epoch)) < 0)
			return rc;
		lend = rc == 0;
	}
	/* One growth of the row's bytes for the whole cell (its names, its
	 * value and a terminator each), not one per part. */
	if ((rc = room_for(&r->bytes, r->cur_family.n + r->cur_qualifier.n +
	    (f->keys_only || lend ? 0 : value.n) + 2)) < 0 ||
	    (rc = emit(r, st, k->ts, value, f->keys_only, lend)) < 0)
		return rc;
	if (f->cells_per_row_limit != 0 &&
	    ++st->row_emitted >= f->cells_per_row_limit) {
		st->row_full = true;
		return COLUMN_DONE;
	}
	return f->cells_per_column != 0 &&
	    st->emitted >= f->cells_per_column ? COLUMN_DONE : 0;
}

/*
 * Move it to the first entry at or after the column of the entry it is on
 * followed by tail (the column's prefix is all of a put's or a version
 * delete's key but the timestamp and the trailer, 16 bytes; every key
 * after the column sorts after the prefix and any tail): step a few
 * entries, then seek.  target is scratch.
 */
static int
skip_in_column(struct iter *it, struct buf *target, const uint8_t tail[16])
{
	struct slice key = iter_key(it);
	int rc;

	if (key.n < 16)
		return bt_error_set(BT_ECORRUPT,
		    "tablet: internal key too short");
	if ((rc = buf_set(target, key.p, key.n - 16)) < 0 ||
	    (rc = buf_append(target, tail, 16)) < 0)
		return rc;
	for (int i = 0; i < SKIP_STEPS; i++) {
		if ((rc = iter_next(it)) < 0)
			return rc;
		if (!iter_valid(it) ||
		    slice_compare(iter_key(it), buf_slice(target)) >= 0)
			return 0;
	}
	return iter_seek(it, buf_slice(target));
}

/* Move it past every entry of the column of the entry it is on (each is
 * the column's prefix and 16 bytes, below 16 bytes of 0xff). */
static int
skip_column(struct iter *it, struct cells_row *r)
{
	static const uint8_t past[16] = {
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
	};

	return skip_in_column(it, &r->seek_key, past);
}

/* Move it to the column's first entry at or before max_ts (the tail
 * be64(~max_ts), then the smallest trailer). */
static int
skip_to_max_ts(struct iter *it, struct cells_row *r, int64_t max_ts)
{
	uint8_t at[16] = { 0 };

	put_be64(at, ~(uint64_t)max_ts);
	return skip_in_column(it, &r->seek_key, at);
}

/*
 * Move it past every entry of the row whose escaped prefix (through its
 * terminator 0x00 0x01) is prefix: to prefix with its terminator made
 * 0x00 0x02, which sorts after every key of the row and before every
 * later row (ikey.h: an escaped component that extends the row's goes on
 * with a non-zero byte or 0x00 0xff).  target is scratch.
 */
int
cells_skip_row(struct iter *it, struct slice prefix, struct buf *target)
{
	int rc;

	if (prefix.n < 2 || prefix.p[prefix.n - 1] != 0x01)
		return bt_error_set(BT_ECORRUPT,
		    "tablet: row prefix without its terminator");
	/* prefix may be the iterator's key, which a step replaces. */
	if ((rc = buf_set(target, prefix.p, prefix.n)) < 0)
		return rc;
	for (int i = 0; i < SKIP_STEPS; i++) {
		if ((rc = iter_next(it)) < 0)
			return rc;
		if (!iter_valid(it) ||
		    !slice_starts_with(iter_key(it), buf_slice(target)))
			return 0;
	}
	target->p[target->n - 1] = 0x02;
	return iter_seek(it, buf_slice(target));
}

/* cells_skip_row() for the row that r is resolving (walk_row()). */
static int
row_skip_rest(struct iter *it, struct cells_row *r, bool plain)
{
	int rc;

	if (!plain)
		return cells_skip_row(it, buf_slice(&r->row_prefix),
		    &r->seek_key);
	/* A plain row's prefix is its key then 0x00 0x01; build it in
	 * scratch (the decode of the next key replaces it anyway). */
	if ((rc = buf_set(&r->scratch, r->key.p, r->key.n)) < 0 ||
	    (rc = buf_append(&r->scratch, "\x00\x01", 2)) < 0)
		return rc;
	return cells_skip_row(it, buf_slice(&r->scratch), &r->seek_key);
}

/*
 * Walk the entries of the row it is on, updating the delete state, and call
 * version_fn for each version entry visible at snapshot.  Shared by reads
 * and compactions so that both follow one set of rules.  When version_fn
 * returns COLUMN_DONE the rest of the column is stepped over undecoded.
 * Inlined into each caller, so that version_fn is a direct call there.
 */
static inline __attribute__((always_inline)) int
walk_row(struct iter *it, uint64_t snapshot,
    const struct cells_schema *schema, const struct cells_filter *filter,
    struct cells_row *r, struct resolver *st,
    int (*version_fn)(void *arg, struct resolver *st, const struct ikey *k),
    void *arg)
{
	struct slice key;
	struct ikey k;
	bool plain, column_done, too_new;
	int rc;

	r->count = 0;
	buf_clear(&r->bytes);
	if (!iter_valid(it))
		return BT_DONE;
	key = iter_key(it);
	if ((rc = ikey_decode_inline(key, &k, &r->scratch)) < 0)
		goto corrupt;
	r->key.n = 0;
	if ((rc = room_for(&r->key, k.row.n + 1)) < 0)
		return rc;
	memcpy(r->key.p, k.row.p, k.row.n);
	r->key.p[k.row.n] = '\0';
	r->key.n = k.row.n;
	/* A row without 0x00 bytes is its own escape, borrowed from key:
	 * esc(row) is the key then 0x00 0x01.  Others keep their escape. */
	plain = k.row.p == key.p;
	if (!plain && (rc = buf_set(&r->row_prefix, key.p,
	    ikey_row_prefix_length(key))) < 0)
		return rc;
	for (;;) {
		column_done = too_new = false;
		if (k.seq <= snapshot) {
			switch (k.kind) {
			case IKEY_DELETE_ROW:
				if (k.seq > st->row_delete_seq)
					st->row_delete_seq = k.seq;
				break;
			case IKEY_DELETE_FAMILY:
				if ((rc = enter_family(r, st, schema,
				    k.family)) < 0)
					return rc;
				if (k.seq > st->family_delete_seq)
					st->family_delete_seq = k.seq;
				break;
			case IKEY_DELETE_COLUMN:
				if ((rc = enter_family(r, st, schema,
				    k.family)) < 0 ||
				    (rc = enter_column(r, st, filter,
				    k.qualifier)) < 0)
					return rc;
				if (k.seq > st->column_delete_seq)
					st->column_delete_seq = k.seq;
				break;
			case IKEY_PUT:
			case IKEY_DELETE_VERSION:
				if ((rc = enter_family(r, st, schema,
				    k.family)) < 0 ||
				    (rc = enter_column(r, st, filter,
				    k.qualifier)) < 0 ||
				    (rc = version_fn(arg, st, &k)) < 0)
					return rc;
				column_done = rc == COLUMN_DONE;
				too_new = rc == COLUMN_TOO_NEW;
				break;
			}
		}
		/* A row with its limit of cells is over. */
		if (st->row_full) {
			if (!st->point && (rc = row_skip_rest(it, r,
			    plain)) < 0)
				return rc;
			break;
		}
		/*
		 * The column is over.  Most columns end here anyway (one
		 * version each, as a scan of newest cells meets them), so the
		 * first time the next entry is only stepped to: if it is of
		 * the same column it says COLUMN_DONE again, and the rest is
		 * stepped over, the qualifier buffer serving as scratch until
		 * enter_column() sets it again for the next column.
		 */
		/* A point read is over once no later column is selected. */
		if (column_done && st->point && filter_passed(filter,
		    buf_slice(&r->cur_family), buf_slice(&r->cur_qualifier)))
			break;
		if (column_done && st->column_over) {
			st->column_started = false;
			rc = skip_column(it, r);
		} else if (too_new) {
			rc = skip_to_max_ts(it, r, filter->max_ts);
		} else {
			st->column_over = column_done;
			rc = iter_next(it);
		}
		if (rc < 0)
			return rc;
		if (!iter_valid(it))
			break;
		/* Escaped rows are prefix-free: a key that does not start
		 * with this row's belongs to a later row, and is decoded
		 * when that row is read. */
		key = iter_key(it);
		if (!(plain ? key.n >= r->key.n + 2 &&
		    memcmp(key.p, r->key.p, r->key.n) == 0 &&
		    key.p[r->key.n] == 0x00 && key.p[r->key.n + 1] == 0x01 :
		    slice_starts_with(key, buf_slice(&r->row_prefix))))
			break;
		if ((rc = ikey_decode_inline(key, &k, &r->scratch)) < 0)
			goto corrupt;
	}
	return 0;
corrupt:
	if (rc == -ENOMEM)
		return rc;
	return bt_error_set(BT_ECORRUPT, "tablet: internal key does not decode");
}

struct read_walk {
	struct iter *it;
	struct cells_row *r;
	int64_t now;
	const struct cells_filter *filter;
};

static int
read_walk_version(void *arg, struct resolver *st, const struct ikey *k)
{
	struct read_walk *w = arg;

	return read_version(w->r, st, k, w->it, w->now, w->filter);
}

int
cells_read_row(struct iter *it, uint64_t snapshot,
    const struct cells_schema *schema, int64_t now,
    const struct cells_filter *filter, struct cells_row *r)
{
	struct resolver st = { 0 };
	struct read_walk w = { it, r, now, filter };

	return walk_row(it, snapshot, schema, filter, r, &st,
	    read_walk_version, &w);
}

int
cells_read_point(struct iter *it, uint64_t snapshot,
    const struct cells_schema *schema, int64_t now,
    const struct cells_filter *filter, struct cells_row *r)
{
	struct resolver st = { .point = true };
	struct read_walk w = { it, r, now, filter };

	return walk_row(it, snapshot, schema, filter, r, &st,
	    read_walk_version, &w);
}

struct compact_walk {
	struct iter *it;
	int64_t now;
	int (*keep)(void *arg, struct slice key, struct slice value);
	void *arg;
};

static int
compact_walk_version(void *arg, struct resolver *st, const struct ikey *k)
{
	struct compact_walk *w = arg;
	int rc;

	if (judge_version(st, k, w->now) != VERDICT_VERSION)
		return 0;
	rc = w->keep(w->arg, iter_key(w->it), iter_value(w->it));
	return rc > 0 ? 0 : rc;	/* a compaction sees every entry */
}

int
cells_compact_row(struct iter *it, const struct cells_schema *schema,
    int64_t now, struct cells_row *r,
    int (*keep)(void *arg, struct slice key, struct slice value), void *arg)
{
	static const struct cells_filter everything = { 0 };
	struct resolver st = { 0 };
	struct compact_walk w = { it, now, keep, arg };

	return walk_row(it, UINT64_MAX, schema, &everything, r, &st,
	    compact_walk_version, &w);
}

void
cells_flush_filter_init(struct cells_flush_filter *f)
{
	memset(f, 0, sizeof(*f));
	for (size_t i = 0; i < 3; i++)
		buf_init(&f->scope[i]);
	buf_init(&f->slot);
}

void
cells_flush_filter_release(struct cells_flush_filter *f)
{
	for (size_t i = 0; i < 3; i++)
		buf_release(&f->scope[i]);
	buf_release(&f->slot);
}

/*
 * Keys come in memtable order, so a marker comes before what it masks
 * and the newest entry of a slot before the older ones (ikey.h).  The
 * prefix a marker covers is its key but its 0x00 0x00 and trailer (a row
 * or family delete) or its be64(0) and trailer (a column delete): every
 * key it masks starts with it, since escaped components are prefix-free,
 * and once keys have passed it none does again.
 */
int
cells_flush_filter_keep(struct cells_flush_filter *f, struct slice key)
{
	uint64_t trailer, seq;
	size_t scope, cut;
	unsigned kind;
	int rc;

	if (key.n < 10)
		return 1;	/* not ours to judge; the reader reports it */
	trailer = ikey_trailer(key);
	seq = trailer >> 8;
	kind = (unsigned)(trailer & 0xff);
	for (size_t i = 0; i < 3; i++)
		if (f->scope_seq[i] > seq &&
		    slice_starts_with(key, buf_slice(&f->scope[i])))
			return 0;
	switch (kind) {
	case IKEY_DELETE_ROW:
		scope = 0;
		cut = 10;
		break;
	case IKEY_DELETE_FAMILY:
		scope = 1;
		cut = 10;
		break;
	case IKEY_DELETE_COLUMN:
		scope = 2;
		cut = 16;
		break;
	case IKEY_PUT:
	case IKEY_DELETE_VERSION:
		key.n -= 8;
		if (f->have_slot && slice_equal(key, buf_slice(&f->slot)))
			return 0;	/* an older entry of the slot */
		if ((rc = buf_set(&f->slot, key.p, key.n)) < 0)
			return rc;
		f->have_slot = true;
		return 1;
	default:
		return 1;
	}
	if (key.n < cut)
		return 1;
	if ((rc = buf_set(&f->scope[scope], key.p, key.n - cut)) < 0)
		return rc;
	f->scope_seq[scope] = seq;
	return 1;
}
