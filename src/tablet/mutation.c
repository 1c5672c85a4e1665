/* mutation.c - the commit-log record of a row mutation (mutation.h). */
#include <errno.h>

#include "tablet/mutation.h"
#include "util/alloc.h"
#include "util/coding.h"
#include "util/error.h"

int
mutation_record_encode(uint64_t seq, uint64_t table_id, struct slice row,
    const struct mutation *ops, size_t count, struct buf *out)
{
	uint8_t version = MUTATION_RECORD_VERSION;
	int rc;

	if (count == 0 || count > UINT32_MAX)
		return -EINVAL;
	if ((rc = buf_append(out, &version, 1)) < 0 ||
	    (rc = buf_put_varint64(out, seq)) < 0 ||
	    (rc = buf_put_varint64(out, table_id)) < 0 ||
	    (rc = buf_put_lenprefixed(out, row)) < 0 ||
	    (rc = buf_put_varint32(out, (uint32_t)count)) < 0)
		return rc;
	for (size_t i = 0; i < count; i++) {
		const struct mutation *m = &ops[i];
		uint8_t kind = (uint8_t)m->kind;

		if (m->ts < 0)
			return -EINVAL;
		if ((rc = buf_append(out, &kind, 1)) < 0 ||
		    (rc = buf_put_lenprefixed(out, m->family)) < 0 ||
		    (rc = buf_put_lenprefixed(out, m->qualifier)) < 0 ||
		    (rc = buf_put_varint64(out, (uint64_t)m->ts)) < 0 ||
		    (rc = buf_put_lenprefixed(out, m->value)) < 0)
			return rc;
	}
	return 0;
}

int
mutation_record_decode(struct slice rec, struct mutation_record *out)
{
	struct slice in = rec;
	uint32_t count;
	uint64_t ts;

	out->ops = NULL;
	if (in.n < 1 || in.p[0] != MUTATION_RECORD_VERSION)
		return bt_error_set(BT_ECORRUPT,
		    "mutation record: unknown version");
	slice_skip(&in, 1);
	if (get_varint64(&in, &out->seq) < 0 ||
	    get_varint64(&in, &out->table_id) < 0 ||
	    get_lenprefixed(&in, &out->row) < 0 ||
	    get_varint32(&in, &count) < 0 || count == 0 ||
	    count > in.n / 5)
		goto corrupt;
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
