/*
 * fuzz_gc_policy.c - the GC policy parser (src/tablet/gc_policy.c): any
 * text parses or fails with -EINVAL; a policy that parses formats to a
 * canonical text that parses to a policy with the same text and the same
 * verdicts.
 */
#include <errno.h>
#include <string.h>

#include "fuzz.h"
#include "tablet/gc_policy.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gc_policy *p, *q;
	char *text, *canon, *canon2;
	size_t n, n2;
	int rc;

	FUZZ_CHECK((text = malloc(size + 1)) != NULL);
	memcpy(text, data, size);
	text[size] = '\0';
	if ((rc = gc_policy_parse(text, &p)) != 0) {
		FUZZ_CHECK(rc == -EINVAL);
		free(text);
		return 0;
	}
	n = gc_policy_format(p, NULL, 0);
	FUZZ_CHECK((canon = malloc(n + 1)) != NULL);
	FUZZ_CHECK(gc_policy_format(p, canon, n + 1) == n);
	FUZZ_CHECK(strlen(canon) == n);
	FUZZ_CHECK(gc_policy_parse(canon, &q) == 0);
	n2 = gc_policy_format(q, NULL, 0);
	FUZZ_CHECK((canon2 = malloc(n2 + 1)) != NULL);
	gc_policy_format(q, canon2, n2 + 1);
	FUZZ_CHECK(strcmp(canon, canon2) == 0);
	FUZZ_CHECK(gc_policy_keeps_all(p) == gc_policy_keeps_all(q));
	for (uint64_t i = 0; i < 4; i++) {
		int64_t now = INT64_MAX / 2, age = (int64_t)1 << (i * 12);

		FUZZ_CHECK(gc_policy_condemns(p, i, now - age, now) ==
		    gc_policy_condemns(q, i, now - age, now));
		FUZZ_CHECK(gc_policy_condemns(p, i * 1000000, 0, now) ==
		    gc_policy_condemns(q, i * 1000000, 0, now));
	}
	gc_policy_free(p);
	gc_policy_free(q);
	free(canon);
	free(canon2);
	free(text);
	return 0;
}
