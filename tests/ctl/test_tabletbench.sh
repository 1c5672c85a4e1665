#!/bin/sh
# test_tabletbench.sh - the benchmarks give right answers: tabletbench runs
# every workload on every engine built into it (tabletfs and SQLite always,
# LevelDB and RocksDB when configure found them) on a small store and exits
# 0, which it does only when every value it read back was the one written
# and every counter holds its sum; its JSON names every engine for every
# benchmark; an unknown engine or benchmark is refused with status 2, and
# a --db longer than PATH_MAX is refused rather than cut short; fsbench
# checks its own reads in a plain directory; and syncprobe reports a rate
# and leaves nothing behind.  No timing is asserted: figures are for
# scripts/bench.
set -eu

: "${top_builddir:?top_builddir is not set}"
bench="$top_builddir/src/bench/tabletbench"
fsbench="$top_builddir/src/bench/fsbench"
probe="$top_builddir/src/bench/syncprobe"
for t in "$bench" "$fsbench" "$probe"; do
	if [ ! -x "$t" ]; then
		echo "test_tabletbench: $t is not built" >&2
		exit 1
	fi
done

# tabletbench runs each engine in a forked child, which starts threads:
# ThreadSanitizer cannot follow that, so its build skips this test.
if grep -q -- '-fsanitize=thread' "$top_builddir/Makefile" 2>/dev/null; then
	echo "test_tabletbench: skipped under ThreadSanitizer (forked engines)"
	exit 77
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' HUP INT TERM
failures=0
n=0

ok() {
	n=$((n + 1))
	echo "ok $n - $1"
}

not_ok() {
	n=$((n + 1))
	failures=$((failures + 1))
	echo "not ok $n - $1"
}

all="fillseq,fillrandom,overwrite,fillsync,readrandom,readmissing"
all="$all,readpastend,readseq,seekrandom,readwhilewriting,increment,compact"
all="$all,readrandom,readhot,readsequential,readwhilestreaming"
if "$bench" --num 3000 --runs 2 --threads 3,5 --benchmarks "$all" \
    --db "$tmp/db" --json > "$tmp/out.json" 2> "$tmp/err"; then
	ok "every workload on every engine reads back what it wrote"
else
	cat "$tmp/err" >&2
	not_ok "every workload on every engine reads back what it wrote"
fi
engines=$(sed -n 's/^tabletbench: engines \([a-z ]*\).*/\1/p' "$tmp/err")
slots=$(grep -c '"name": "' "$tmp/out.json" || true)
missing=""
for e in $engines; do
	c=$(grep -c "\"engine\": \"$e\"" "$tmp/out.json" || true)
	# 18 benchmark lines: fillsync three times (1, 3 and 5 threads).
	[ "$c" -eq 18 ] || missing="$missing $e:$c"
done
# tabletfs and SQLite are always built in, whatever else configure found.
for e in tabletfs sqlite; do
	case " $engines " in
	*" $e "*) ;;
	*) missing="$missing $e:absent (engines: $engines)" ;;
	esac
done
if [ -z "$missing" ] && [ "$slots" -ge 18 ]; then
	ok "the JSON has every engine ($engines) for every benchmark"
else
	not_ok "the JSON has every engine for every benchmark:$missing"
fi
if grep -q '"name": "readrandom+compacted"' "$tmp/out.json" &&
    grep -q '"mismatches": 0}$' "$tmp/out.json"; then
	ok "a read after compact is labelled +compacted; no mismatches"
else
	not_ok "a read after compact is labelled +compacted; no mismatches"
fi
[ -z "$(ls -A "$tmp/db")" ] && ok "the stores are removed at the end" ||
    not_ok "the stores are removed at the end"

status=0
"$bench" --engines nosuch --num 10 2> "$tmp/err" || status=$?
if [ "$status" -eq 2 ] && grep -q 'unknown engine "nosuch"' "$tmp/err"; then
	ok "an unknown engine is refused with status 2"
else
	not_ok "an unknown engine is refused with status 2 (got $status)"
fi
status=0
"$bench" --benchmarks fillseq,nosuch --num 10 2> "$tmp/err" || status=$?
if [ "$status" -eq 2 ] && grep -q 'unknown benchmark "nosuch"' "$tmp/err"; then
	ok "an unknown benchmark is refused with status 2"
else
	not_ok "an unknown benchmark is refused with status 2 (got $status)"
fi
status=0
# Short components, so that only the whole is too long (a cut-short path
# fails too, but on its missing parent).
long=$tmp$(printf '/d%.0s' $(seq 2100))
"$bench" --engines tabletfs --benchmarks fillseq --num 10 --db "$long" \
    2> "$tmp/err" || status=$?
if [ "$status" -ne 0 ] && grep -q "File name too long" "$tmp/err"; then
	ok "a --db longer than PATH_MAX is refused, not cut short"
else
	not_ok "a --db longer than PATH_MAX is refused (got $status)"
fi

mkdir "$tmp/plain"
if "$fsbench" --cells 200 --big 2 "$tmp/plain" > "$tmp/fs.out" &&
    [ "$(cut -d' ' -f1 "$tmp/fs.out" | tr '\n' ' ')" = \
    "create stat read readdir readdir1 write1m read1m " ]; then
	ok "fsbench runs and checks every operation in a plain directory"
else
	not_ok "fsbench runs and checks every operation in a plain directory"
fi

mkdir "$tmp/probe"
if "$probe" --seconds 0.05 --rounds 2 "$tmp/probe" > "$tmp/probe.out" &&
    grep -q '^syncs/s [1-9][0-9]* p50_us .* mode overwrite$' \
    "$tmp/probe.out" && [ -z "$(ls -A "$tmp/probe")" ]; then
	ok "syncprobe reports a rate of synced writes and removes its file"
else
	not_ok "syncprobe reports a rate of synced writes and removes its file"
fi

echo "1..$n"
[ "$failures" -eq 0 ]
