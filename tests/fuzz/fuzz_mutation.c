/*
 * fuzz_mutation.c - the commit-log record of a row mutation
 * (src/tablet/mutation.c): decode must accept only what it can account
 * for byte by byte, and what it accepts re-encodes to a record that
 * decodes to the same mutation.
 */
#include <string.h>

#include "fuzz.h"
#include "tablet/mutation.h"
#include "util/buf.h"

static void
check_same(const struct mutation_record *a, const struct mutation_record *b)
{
	FUZZ_CHECK(a->seq == b->seq && a->table_id == b->table_id &&
	    a->stamp == b->stamp);
	FUZZ_CHECK(slice_equal(a->row, b->row));
	FUZZ_CHECK(a->count == b->count);
	for (size_t i = 0; i < a->count; i++) {
		const struct mutation *x = &a->ops[i], *y = &b->ops[i];

		FUZZ_CHECK(x->kind == y->kind && x->ts == y->ts);
		FUZZ_CHECK(slice_equal(x->family, y->family));
		FUZZ_CHECK(slice_equal(x->qualifier, y->qualifier));
		FUZZ_CHECK(slice_equal(x->value, y->value));
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mutation_record a, b;
	struct buf enc;
	uint8_t *copy;

	/* An exact-size copy, so that ASan sees any read past the end. */
	FUZZ_CHECK((copy = malloc(size ? size : 1)) != NULL);
	memcpy(copy, data, size);
	if (mutation_record_decode(slice_make(copy, size), &a) != 0) {
		FUZZ_CHECK(a.ops == NULL);
		free(copy);
		return 0;
	}
	FUZZ_CHECK(a.count >= 1);
	for (size_t i = 0; i < a.count; i++) {
		FUZZ_CHECK(a.ops[i].kind >= MUTATION_PUT &&
		    a.ops[i].kind <= MUTATION_DELETE_ROW);
		FUZZ_CHECK(a.ops[i].ts >= 0);
	}
	buf_init(&enc);
	FUZZ_CHECK(mutation_record_encode(a.seq, a.table_id, a.stamp, a.row,
	    a.ops, a.count, &enc) == 0);
	FUZZ_CHECK(mutation_record_decode(buf_slice(&enc), &b) == 0);
	check_same(&a, &b);
	/* Version 1 comes back as 2, one stamp byte longer. */
	FUZZ_CHECK(enc.n <= size + (copy[0] == 1));
	mutation_record_release(&b);
	mutation_record_release(&a);
	buf_release(&enc);
	free(copy);
	return 0;
}
