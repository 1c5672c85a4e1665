/* mutation.c - the commit-log record of a row mutation (mutation.h). */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "tablet/mutation.h"
#include "util/alloc.h"
#include "util/coding.h"
#include "util/error.h"

/* At most the bytes a length-prefixed s takes; false on overflow. */
static bool
lenprefixed_add(size_t *size, struct slice s)
{
	if (s.n > SIZE_MAX - VARINT64_MAX_BYTES - *size)
		return false;
	*size += VARINT64_MAX_BYTES + s.n;
	return true;
}

static uint8_t *
put_lenprefixed(uint8_t *dst, struct slice s)
{
	dst = encode_varint64(dst, s.n);
	if (s.n > 0)
		memcpy(dst, s.p, s.n);
	return dst + s.n;
}

/*
 * The record is bounded first (every varint at its longest) and written
 * in place with one reservation: this runs once per mutation on the
 * write path, and exact varint lengths cost more than the slack.  Values
 * of min_gap bytes or more are left out, each described in gaps[].
 */
static int
record_encode(uint64_t seq, uint64_t table_id, int64_t stamp,
    struct slice row, const struct mutation *ops, size_t count,
    struct buf *out, size_t min_gap, struct mutation_gap *gaps,
    size_t *ngaps)
{
	size_t size = 1 + 4 * VARINT64_MAX_BYTES, n = 0;
	uint8_t *p;
	int rc;

	if (count == 0 || count > UINT32_MAX || stamp < 0)
		return -EINVAL;
	if (!lenprefixed_add(&size, row))
		return -ENOMEM;
	for (size_t i = 0; i < count; i++) {
		const struct mutation *m = &ops[i];
		struct slice value = m->value;

		if (m->ts < 0)
			return -EINVAL;
		if (size > SIZE_MAX - 1 - VARINT64_MAX_BYTES)
			return -ENOMEM;
		size += 1 + VARINT64_MAX_BYTES;	/* kind, timestamp */
		if (value.n >= min_gap)
			value.n = 0;
		if (!lenprefixed_add(&size, m->family) ||
		    !lenprefixed_add(&size, m->qualifier) ||
		    !lenprefixed_add(&size, value))
			return -ENOMEM;
	}
	if ((rc = buf_reserve(out, size)) < 0)
		return rc;
	p = out->p + out->n;
	*p++ = MUTATION_RECORD_VERSION;
	p = encode_varint64(p, seq);
	p = encode_varint64(p, table_id);
	p = encode_varint64(p, (uint64_t)stamp);
	p = put_lenprefixed(p, row);
	p = encode_varint32(p, (uint32_t)count);
	for (size_t i = 0; i < count; i++) {
		const struct mutation *m = &ops[i];

		*p++ = (uint8_t)m->kind;
		p = put_lenprefixed(p, m->family);
		p = put_lenprefixed(p, m->qualifier);
		p = encode_varint64(p, (uint64_t)m->ts);
		if (m->value.n < min_gap) {
			p = put_lenprefixed(p, m->value);
			continue;
		}
		p = encode_varint64(p, m->value.n);
		gaps[n].at = (size_t)(p - out->p);
		gaps[n].value = m->value;
		n++;
	}
	out->n = (size_t)(p - out->p);
	if (ngaps != NULL)
		*ngaps = n;
	return 0;
}

int
mutation_record_encode(uint64_t seq, uint64_t table_id, int64_t stamp,
    struct slice row, const struct mutation *ops, size_t count,
    struct buf *out)
{
	return record_encode(seq, table_id, stamp, row, ops, count, out,
	    SIZE_MAX, NULL, NULL);
}

int
mutation_record_encode_split(uint64_t seq, uint64_t table_id, int64_t stamp,
    struct slice row, const struct mutation *ops, size_t count,
    size_t min_gap, struct buf *out, struct mutation_gap *gaps,
    size_t *ngaps)
{
	if (min_gap == 0)
		return -EINVAL;
	return record_encode(seq, table_id, stamp, row, ops, count, out,
	    min_gap, gaps, ngaps);
}

int
mutation_record_decode(struct slice rec, struct mutation_record *out)
{
	struct slice in = rec;
	uint32_t count;
	uint64_t ts, stamp = 0;
	uint8_t version;

	out->ops = NULL;
	out->count = 0;
	if (in.n < 1 || (in.p[0] != 1 && in.p[0] != MUTATION_RECORD_VERSION))
		return bt_error_set(BT_ECORRUPT,
		    "mutation record: unknown version");
	version = in.p[0];
	slice_skip(&in, 1);
	if (get_varint64(&in, &out->seq) < 0 ||
	    get_varint64(&in, &out->table_id) < 0 ||
	    (version >= 2 && (get_varint64(&in, &stamp) < 0 ||
	    stamp > INT64_MAX)) ||
	    get_lenprefixed(&in, &out->row) < 0 ||
	    get_varint32(&in, &count) < 0 || count == 0 ||
	    count > in.n / 5)
		goto corrupt;
	out->stamp = (int64_t)stamp;
	if ((out->ops = bt_calloc(count, sizeof(*out->ops))) == NULL)
		return -ENOMEM;
	out->count = count;
	for (uint32_t i = 0; i < count; i++) {
		struct mutation *m = &out->ops[i];

		if (in.n < 1 || in.p[0] < MUTATION_PUT ||
		    in.p[0] > MUTATION_DELETE_ROW)
			goto corrupt;
		m->kind = (enum mutation_kind)in.p[0];
		slice_skip(&in, 1);
		if (get_lenprefixed(&in, &m->family) < 0 ||
		    get_lenprefixed(&in, &m->qualifier) < 0 ||
		    get_varint64(&in, &ts) < 0 || ts > INT64_MAX ||
		    get_lenprefixed(&in, &m->value) < 0)
			goto corrupt;
		m->ts = (int64_t)ts;
	}
	if (in.n != 0)
		goto corrupt;
	return 0;
corrupt:
	mutation_record_release(out);
	return bt_error_set(BT_ECORRUPT, "mutation record: does not decode");
}

void
mutation_record_release(struct mutation_record *r)
{
	bt_free(r->ops);
	r->ops = NULL;
	r->count = 0;
}
