#!/bin/sh
# test_fuzz_corpus.sh - every fuzz target replays its checked-in corpus
# (tests/fuzz/corpus/TARGET: the seeds and every input that once crashed
# a decoder) through the plain driver of fuzz_main.c: no crash, no
# sanitizer report under scripts/check --sanitize, no failed property.
set -eu
: "${top_builddir:?}" "${top_srcdir:?}"
corpus=$top_srcdir/tests/fuzz/corpus
n=0
for dir in "$corpus"/*/; do
	target=$(basename "$dir")
	bin=$top_builddir/tests/fuzz/$target
	[ -x "$bin" ] || { echo "FAIL: $bin not built" >&2; exit 1; }
	"$bin" "$dir" || { echo "FAIL: $target on $dir" >&2; exit 1; }
	n=$((n + 1))
done
[ "$n" -ge 8 ] || { echo "FAIL: only $n corpora in $corpus" >&2; exit 1; }
