/*
 * fuzz_block.c - SSTable block contents (src/sstable/block.c): the
 * iterator must reject any malformed block with an error and never read
 * outside it, and a seek never lands below its target.  The first
 * byte picks a seek target length taken from the end of the input.
 */
#include <string.h>

#include "fuzz.h"
#include "sstable/block.h"
#include "util/buf.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct slice contents, target, key;
	struct iter *it;
	struct buf first;
	size_t tlen, n = 0;
	int rc;

	if (size < 1)
		return 0;
	tlen = data[0] % 16;
	if (tlen > size - 1)
		tlen = size - 1;
	/* A copy of exactly the block's size, so ASan sees any overread. */
	contents = slice_make(data + 1, size - 1);
	target = slice_make(data + size - tlen, tlen);
	if (block_iter_new(contents, NULL, NULL, &it) < 0)
		return 0;
	buf_init(&first);
	for (rc = iter_seek_first(it); rc == 0 && iter_valid(it);
	    rc = iter_next(it)) {
		key = iter_key(it);
		if (n == 0)
			FUZZ_CHECK(buf_set(&first, key.p, key.n) == 0);
		(void)iter_value(it);
		n++;
	}
	/*
	 * A seek may meet damage the scan did not (the restart array is
	 * only read by seeks), but what it finds is never below its target.
	 */
	if (rc == 0 && n > 0 && iter_seek(it, buf_slice(&first)) == 0 &&
	    iter_valid(it))
		FUZZ_CHECK(slice_compare(iter_key(it), buf_slice(&first)) >= 0);
	if (iter_seek(it, target) == 0 && iter_valid(it)) {
		key = iter_key(it);
		FUZZ_CHECK(slice_compare(key, target) >= 0);
		(void)iter_value(it);
		(void)iter_next(it);
	}
	buf_release(&first);
	iter_free(it);
	return 0;
}
