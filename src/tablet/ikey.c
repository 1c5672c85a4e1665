/* ikey.c - internal key encoding; the layout is described in ikey.h. */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "tablet/ikey.h"
#include "util/coding.h"
#include "util/error.h"

/*
 * Append s escaped (0x00 -> 0x00 0xff) and terminated (0x00 0x01).  Room
 * for the worst case is reserved once and the bytes written in place: a
 * key is built from three of these on every write.
 */
static int
append_escaped(struct buf *out, struct slice s)
{
	const uint8_t *p = s.p, *end = s.p + s.n;
	uint8_t *d;
	int rc;

	if (s.n > (SIZE_MAX - 2) / 2)
		return -ENOMEM;
	if ((rc = buf_reserve(out, 2 * s.n + 2)) < 0)
		return rc;
	d = out->p + out->n;
	while (p < end) {
		const uint8_t *z = memchr(p, 0, (size_t)(end - p));
		size_t run = z ? (size_t)(z - p) : (size_t)(end - p);

		memcpy(d, p, run);
		d += run;
		p += run;
		if (z != NULL) {
			*d++ = 0x00;
			*d++ = 0xff;
			p++;
		}
	}
	*d++ = 0x00;
	*d++ = 0x01;
	out->n = (size_t)(d - out->p);
	return 0;
}

static int
append_be64(struct buf *out, uint64_t v)
{
	int rc;

	if ((rc = buf_reserve(out, 8)) < 0)
		return rc;
	put_be64(out->p + out->n, v);
	out->n += 8;
	return 0;
}

int
ikey_append_row_prefix(struct slice row, struct buf *out)
{
	return append_escaped(out, row);
}

int
ikey_append_family_prefix(struct slice row, struct slice family,
    struct buf *out)
{
	int rc;

	if ((rc = append_escaped(out, row)) < 0)
		return rc;
	return append_escaped(out, family);
}

int
ikey_append_column_prefix(struct slice row, struct slice family,
    struct slice qualifier, struct buf *out)
{
	int rc;

	if ((rc = ikey_append_family_prefix(row, family, out)) < 0)
		return rc;
	return append_escaped(out, qualifier);
}

int
ikey_encode(const struct ikey *k, struct buf *out)
{
	static const uint8_t marker[2] = { 0x00, 0x00 };
	uint64_t trailer = ~((k->seq & IKEY_MAX_SEQ) << 8 | (uint64_t)k->kind);
	int rc;

	switch (k->kind) {
	case IKEY_DELETE_ROW:
		if ((rc = append_escaped(out, k->row)) < 0 ||
		    (rc = buf_append(out, marker, 2)) < 0)
			return rc;
		break;
	case IKEY_DELETE_FAMILY:
		if ((rc = ikey_append_family_prefix(k->row, k->family,
		    out)) < 0 || (rc = buf_append(out, marker, 2)) < 0)
			return rc;
		break;
	case IKEY_DELETE_COLUMN:
		if ((rc = ikey_append_column_prefix(k->row, k->family,
		    k->qualifier, out)) < 0 || (rc = append_be64(out, 0)) < 0)
			return rc;
		break;
	case IKEY_PUT:
	case IKEY_DELETE_VERSION:
		if (k->ts < 0)
			return -EINVAL;
		if ((rc = ikey_append_column_prefix(k->row, k->family,
		    k->qualifier, out)) < 0 ||
		    (rc = append_be64(out, ~(uint64_t)k->ts)) < 0)
			return rc;
		break;
	default:
		return -EINVAL;
	}
	return append_be64(out, trailer);
}

/*
 * read_component() when the component holds an escaped 0x00: unescape it
 * into scratch at *used.  The first such component of a key reserves room
 * for everything left of the key, so that later ones never move what
 * earlier ones wrote.  0, BT_ECORRUPT or -ENOMEM.
 */
static int
read_component_escaped(struct slice *in, struct slice *out,
    struct buf *scratch, size_t *used)
{
	const uint8_t *p = in->p, *end = in->p + in->n;
	uint8_t *dst;
	size_t n = 0;

	if (*used + in->n > scratch->cap &&
	    buf_reserve(scratch, *used + in->n) < 0)
		return -ENOMEM;
	dst = scratch->p + *used;
	while (p < end) {
		const uint8_t *z = memchr(p, 0, (size_t)(end - p));

		if (z == NULL || z + 1 >= end)
			return BT_ECORRUPT;
		memcpy(dst + n, p, (size_t)(z - p));
		n += (size_t)(z - p);
		if (z[1] == 0x01) {
			*out = slice_make(dst, n);
			*used += n;
			slice_skip(in, (size_t)(z + 2 - in->p));
			return 0;
		}
		if (z[1] != 0xff)
			return BT_ECORRUPT;
		dst[n++] = 0x00;
		p = z + 2;
	}
	return BT_ECORRUPT;
}

/*
 * Read one escaped component from the front of *in.  Returns 1 when the
 * component is a marker (0x00 0x00) instead, 0 when one was read.  A
 * component without 0x00 (the usual case, kept inline) borrows from the
 * key; otherwise it is unescaped into scratch.  BT_ECORRUPT or -ENOMEM.
 */
static inline int
read_component(struct slice *in, struct slice *out, struct buf *scratch,
    size_t *used)
{
	const uint8_t *p = in->p, *z;

	if (in->n >= 2 && p[0] == 0x00 && p[1] == 0x00) {
		slice_skip(in, 2);
		return 1;
	}
	z = memchr(p, 0, in->n);
	if (z != NULL && z + 1 < p + in->n && z[1] == 0x01) {
		*out = slice_make(p, (size_t)(z - p));
		slice_skip(in, (size_t)(z + 2 - p));
		return 0;
	}
	return read_component_escaped(in, out, scratch, used);
}

int
ikey_decode(struct slice key, struct ikey *k, struct buf *scratch)
{
	struct slice in = key;
	size_t used = 0;
	uint64_t trailer, tsbits;
	int rc;

	buf_clear(scratch);
	memset(k, 0, sizeof(*k));
	k->family = k->qualifier = slice_make("", 0);
	if ((rc = read_component(&in, &k->row, scratch, &used)) != 0)
		goto corrupt;
	if ((rc = read_component(&in, &k->family, scratch, &used)) < 0)
		goto corrupt;
	if (rc == 1) {
		k->kind = IKEY_DELETE_ROW;
		k->family = slice_make("", 0);
		goto trailer;
	}
	if ((rc = read_component(&in, &k->qualifier, scratch, &used)) < 0)
		goto corrupt;
	if (rc == 1) {
		k->kind = IKEY_DELETE_FAMILY;
		k->qualifier = slice_make("", 0);
		goto trailer;
	}
	if (in.n < 8)
		goto corrupt;
	tsbits = get_be64(in.p);
	slice_skip(&in, 8);
	k->ts = tsbits == 0 ? 0 : (int64_t)~tsbits;
	if (tsbits != 0 && k->ts < 0)
		goto corrupt;
	k->kind = tsbits == 0 ? IKEY_DELETE_COLUMN : IKEY_PUT;
trailer:
	if (in.n != 8)
		goto corrupt;
	trailer = ~get_be64(in.p);
	k->seq = trailer >> 8;
	switch ((int)(trailer & 0xff)) {
	case IKEY_PUT:
	case IKEY_DELETE_VERSION:
		if (k->kind != IKEY_PUT)
			goto corrupt;
		k->kind = (enum ikey_kind)(trailer & 0xff);
		break;
	default:
		if ((trailer & 0xff) != (uint64_t)k->kind)
			goto corrupt;
	}
	return 0;
corrupt:
	return rc == -ENOMEM ? rc : BT_ECORRUPT;
}

struct slice
ikey_usage_label(struct slice key)
{
	struct slice family;

	if (ikey_family(key, &family) != 0)
		return slice_make("", 0);
	return family;
}

size_t
ikey_row_prefix_length(struct slice key)
{
	const uint8_t *p = key.p, *end = key.p + key.n;

	while (p < end) {
		const uint8_t *z = memchr(p, 0, (size_t)(end - p));

		if (z == NULL || z + 1 >= end)
			return 0;
		if (z[1] == 0x01)
			return (size_t)(z + 2 - key.p);
		p = z + 2;
	}
	return 0;
}

bool
ikey_put_column(struct slice key, struct slice *column, uint64_t *ts)
{
	size_t row = ikey_row_prefix_length(key);
	uint64_t tsbits;

	if (row == 0 || key.n - row < 16 ||
	    (ikey_trailer(key) & 0xff) != IKEY_PUT)
		return false;
	tsbits = get_be64(key.p + key.n - 16);
	if ((tsbits >> 63) == 0)
		return false;
	*column = slice_make(key.p + row, key.n - row - 16);
	*ts = ~tsbits;
	return true;
}

bool
ikey_sequence(struct slice key, uint64_t *seq)
{
	uint64_t trailer;
	unsigned kind;

	if (key.n < 8)
		return false;
	trailer = ikey_trailer(key);
	kind = (unsigned)(trailer & 0xff);
	if (kind < IKEY_PUT || kind > IKEY_DELETE_ROW)
		return false;
	*seq = trailer >> 8;
	return true;
}

int
ikey_family(struct slice key, struct slice *family)
{
	size_t row = ikey_row_prefix_length(key);
	const uint8_t *p = key.p + row, *end = key.p + key.n, *z;

	if (row == 0 || end - p < 2)
		return BT_ECORRUPT;
	if (p[0] == 0x00 && p[1] == 0x00)
		return 1;
	if ((z = memchr(p, 0, (size_t)(end - p))) == NULL || z + 1 >= end ||
	    z[1] != 0x01)
		return BT_ECORRUPT;
	*family = slice_make(p, (size_t)(z - p));
	return 0;
}
