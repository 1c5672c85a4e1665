/*
 * test_ikey.c - internal keys: round trips for every kind and for byte
 * strings full of 0x00 and 0xff, and byte order of encoded keys equal to
 * the data model's order (row, family, qualifier, markers first, timestamp
 * descending, sequence descending).
 */
#include "tablet/ikey.h"
#include "tap.h"
#include "util/error.h"

struct model_key {
	uint8_t row[6], family[3], qualifier[6];
	size_t row_n, family_n, qualifier_n;
	int64_t ts;
	uint64_t seq;
	enum ikey_kind kind;
};

static struct ikey
to_ikey(const struct model_key *m)
{
	struct ikey k = {
		.row = slice_make(m->row, m->row_n),
		.family = slice_make(m->family, m->family_n),
		.qualifier = slice_make(m->qualifier, m->qualifier_n),
		.ts = m->ts, .seq = m->seq, .kind = m->kind,
	};
	return k;
}

/* The rank of a kind's position within its row/family/column. */
static int
kind_level(enum ikey_kind k)
{
	switch (k) {
	case IKEY_DELETE_ROW:
		return 0;
	case IKEY_DELETE_FAMILY:
		return 1;
	case IKEY_DELETE_COLUMN:
		return 2;
	default:
		return 3;
	}
}

static int
cmp3(int64_t a, int64_t b)
{
	return a < b ? -1 : a > b;
}

/* The order the encoding must produce, computed from the fields. */
static int
model_compare(const struct model_key *a, const struct model_key *b)
{
	int c, la = kind_level(a->kind), lb = kind_level(b->kind);

	if ((c = slice_compare(slice_make(a->row, a->row_n),
	    slice_make(b->row, b->row_n))) != 0)
		return c;
	if (la == 0 || lb == 0) {
		if (la != lb)
			return la == 0 ? -1 : 1;
		return cmp3(b->seq, a->seq);
	}
	if ((c = slice_compare(slice_make(a->family, a->family_n),
	    slice_make(b->family, b->family_n))) != 0)
		return c;
	if (la == 1 || lb == 1) {
		if (la != lb)
			return la == 1 ? -1 : 1;
		return cmp3(b->seq, a->seq);
	}
	if ((c = slice_compare(slice_make(a->qualifier, a->qualifier_n),
	    slice_make(b->qualifier, b->qualifier_n))) != 0)
		return c;
	if (la == 2 || lb == 2) {
		if (la != lb)
			return la == 2 ? -1 : 1;
		return cmp3(b->seq, a->seq);
	}
	if (a->ts != b->ts)
		return a->ts > b->ts ? -1 : 1;
	if (a->seq != b->seq)
		return a->seq > b->seq ? -1 : 1;
	return cmp3(b->kind, a->kind);	/* the trailer is ~(seq << 8 | kind) */
}

static void
random_bytes(uint64_t *st, uint8_t *p, size_t *n, size_t max)
{
	static const uint8_t alphabet[] = { 0x00, 0x01, 0xff, 'a', 'b' };

	*n = tap_rand(st) % (max + 1);
	for (size_t i = 0; i < *n; i++)
		p[i] = alphabet[tap_rand(st) % sizeof(alphabet)];
}

static void
random_key(uint64_t *st, struct model_key *m)
{
	static const enum ikey_kind kinds[] = { IKEY_PUT, IKEY_PUT,
	    IKEY_DELETE_VERSION, IKEY_DELETE_COLUMN, IKEY_DELETE_FAMILY,
	    IKEY_DELETE_ROW };

	memset(m, 0, sizeof(*m));
	random_bytes(st, m->row, &m->row_n, sizeof(m->row));
	if (m->row_n == 0)
		m->row[m->row_n++] = 'r';
	m->kind = kinds[tap_rand(st) % 6];
	m->seq = tap_rand(st) % 4 + (tap_rand(st) % 8 == 0 ? IKEY_MAX_SEQ - 3 : 0);
	if (m->kind == IKEY_DELETE_ROW)
		return;
	m->family_n = 1 + tap_rand(st) % 2;
	for (size_t i = 0; i < m->family_n; i++)
		m->family[i] = "AB"[tap_rand(st) % 2];
	if (m->kind == IKEY_DELETE_FAMILY)
		return;
	random_bytes(st, m->qualifier, &m->qualifier_n, sizeof(m->qualifier));
	if (m->kind == IKEY_DELETE_COLUMN)
		return;
	m->ts = (int64_t)(tap_rand(st) % 4);
	if (tap_rand(st) % 8 == 0)
		m->ts = IKEY_MAX_TS - (int64_t)(tap_rand(st) % 2);
}

static bool
ikey_equal(const struct ikey *a, const struct ikey *b)
{
	return slice_equal(a->row, b->row) && slice_equal(a->family, b->family) &&
	    slice_equal(a->qualifier, b->qualifier) && a->ts == b->ts &&
	    a->seq == b->seq && a->kind == b->kind;
}

static void
test_round_trip_and_order(uint64_t seed)
{
	enum { N = 3000 };
	static struct model_key keys[N];
	static struct buf enc[N];
	struct buf scratch;
	uint64_t st = seed;
	int bad_trip = 0, bad_order = 0, bad_prefix = 0, bad_family = 0;

	buf_init(&scratch);
	for (int i = 0; i < N; i++) {
		struct ikey k, d;
		struct buf rowp;

		random_key(&st, &keys[i]);
		k = to_ikey(&keys[i]);
		buf_init(&enc[i]);
		if (ikey_encode(&k, &enc[i]) != 0 ||
		    ikey_decode(buf_slice(&enc[i]), &d, &scratch) != 0 ||
		    !ikey_equal(&k, &d))
			bad_trip++;
		buf_init(&rowp);
		ikey_append_row_prefix(k.row, &rowp);
		if (ikey_row_prefix_length(buf_slice(&enc[i])) != rowp.n ||
		    !slice_starts_with(buf_slice(&enc[i]), buf_slice(&rowp)))
			bad_prefix++;
		buf_release(&rowp);
		{
			struct slice fam = slice_make(NULL, 0);
			int frc = ikey_family(buf_slice(&enc[i]), &fam);

			if (k.kind == IKEY_DELETE_ROW ? frc != 1 :
			    frc != 0 || !slice_equal(fam, k.family))
				bad_family++;
		}
	}
	is_int(bad_trip, 0, "every kind round-trips through encode/decode");
	is_int(bad_family, 0, "ikey_family finds the family of every kind "
	    "(1 for a row delete), rows with 0x00 included");
	is_int(bad_prefix, 0, "the row prefix is found in every key");
	for (int i = 0; i < N; i++) {
		for (int j = i + 1; j < N && j < i + 60; j++) {
			int want = model_compare(&keys[i], &keys[j]);
			int got = slice_compare(buf_slice(&enc[i]),
			    buf_slice(&enc[j]));

			want = want < 0 ? -1 : want > 0;
			got = got < 0 ? -1 : got > 0;
			if (want != got)
				bad_order++;
		}
	}
	is_int(bad_order, 0, "byte order of encodings is the model order");
	for (int i = 0; i < N; i++)
		buf_release(&enc[i]);
	buf_release(&scratch);
}

/* ikey_family refuses what it cannot answer: an escaped 0x00 in the
 * family (which ikey_decode handles), a key cut inside the row or family. */
static void
test_family_refusals(void)
{
	struct ikey k = { .row = slice_str("r"), .family = slice_make("a\0b",
	    3), .qualifier = slice_str("q"), .ts = 1, .seq = 1,
	    .kind = IKEY_PUT };
	struct slice fam;
	struct buf b;

	buf_init(&b);
	if (ikey_encode(&k, &b) != 0)
		tap_bail("ikey_encode");
	is_int(ikey_family(buf_slice(&b), &fam), BT_ECORRUPT,
	    "ikey_family: an escaped 0x00 in the family is refused");
	is_int(ikey_family(slice_make(b.p, 2), &fam), BT_ECORRUPT,
	    "ikey_family: a key cut in its row is refused");
	is_int(ikey_family(slice_make(b.p, 4), &fam), BT_ECORRUPT,
	    "ikey_family: a key cut before its family ends is refused");
	buf_release(&b);
}

static void
test_corrupt_keys(void)
{
	static const uint8_t bad1[] = { 'a', 0x00 };		/* cut escape */
	static const uint8_t bad2[] = { 'a', 0x00, 0x07, 'b' };	/* bad escape */
	static const uint8_t bad3[] = { 'a', 0x00, 0x01, 0x00, 0x00, 1, 2 };
	struct buf scratch, enc;
	struct ikey k = { .row = slice_str("row"), .family = slice_str("F"),
	    .qualifier = slice_str("q"), .ts = 5, .seq = 9, .kind = IKEY_PUT };
	struct ikey d;

	buf_init(&scratch);
	buf_init(&enc);
	is_int(ikey_decode(slice_make(bad1, sizeof(bad1)), &d, &scratch),
	    BT_ECORRUPT, "a key cut inside an escape is corrupt");
	is_int(ikey_decode(slice_make(bad2, sizeof(bad2)), &d, &scratch),
	    BT_ECORRUPT, "an unknown escape byte is corrupt");
	is_int(ikey_decode(slice_make(bad3, sizeof(bad3)), &d, &scratch),
	    BT_ECORRUPT, "a row delete with a short trailer is corrupt");
	ikey_encode(&k, &enc);
	is_int(ikey_decode(slice_make(enc.p, enc.n - 1), &d, &scratch),
	    BT_ECORRUPT, "a truncated put is corrupt");
	enc.p[enc.n - 1] ^= 0xff;	/* kind byte becomes nonsense */
	is_int(ikey_decode(buf_slice(&enc), &d, &scratch), BT_ECORRUPT,
	    "an unknown kind is corrupt");
	k.ts = -1;
	buf_clear(&enc);
	is_int(ikey_encode(&k, &enc), -EINVAL, "a negative timestamp is "
	    "refused");
	buf_release(&enc);
	buf_release(&scratch);
}

int
main(void)
{
	uint64_t seed = tap_seed();

	test_round_trip_and_order(seed);
	test_corrupt_keys();
	test_family_refusals();
	return tap_done();
}
