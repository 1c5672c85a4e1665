#!/bin/sh
# Bulk load on a cell (tabletctl import --bulk through the client
# library; the C API's own suite, test_api_bulk, runs on a cell in
# test_cell_api.sh).  Proves: a load of many cells, in several batches,
# reads back exactly; a bad line, or a cell of no family, fails the whole
# load with nothing of it visible; a load whose serving server is killed
# (-9) in the middle fails, the next server serves the store, and then
# either all or none of the load is visible, never part; the loads of
# clients killed in the middle leave nothing visible either, and the
# server aborts them when their connections close.
set -eu
. "$(dirname "$0")/lib.sh"

cell_start 2
ctl createtable t families=f,g splits=r05000
ctl createtable u families=f,g

# 12000 cells over two families and both tablets, in a scrambled order
# (the load sorts them), about 1.3 MB: several BULK_PUT batches.
awk 'BEGIN {
	for (i = 0; i < 6000; i++) {
		j = (i * 7919) % 6000
		printf "r%05d\tf\tq\t%d\tvalue-f-%d-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n", j * 2, 100 + j, j
		printf "r%05d\tg\te\t%d\tvalue-g-%d\n", j * 2 + 1, 200 + j, j
	}
}' >"$T/load.tsv"
ctl import --bulk t "$T/load.tsv" >"$T/import.out" 2>&1 ||
    { cat "$T/import.out" >&2; fail "import --bulk on the cell"; }
[ "$(ctl count t)" = 12000 ] || fail "count after the load: $(ctl count t)"
ctl export t | grep -v '^#' | sort >"$T/exported"
sort "$T/load.tsv" >"$T/want"
cmp -s "$T/exported" "$T/want" ||
    { diff "$T/want" "$T/exported" | head >&2; fail "the load reads back otherwise"; }
echo "import --bulk of 12000 cells on the cell reads back exactly"

# A bad line in the middle: the whole load fails, nothing visible.
{
	head -n 3000 "$T/load.tsv" | sed 's/^r/b/'
	printf 'bad line without tabs\n'
	tail -n 3000 "$T/load.tsv" | sed 's/^r/b/'
} >"$T/bad.tsv"
if ctl import --bulk u "$T/bad.tsv" >"$T/bad.out" 2>&1; then
	fail "import --bulk of a file with a bad line succeeded"
fi
grep -q 'bad line' "$T/bad.out" || fail "no 'bad line' in: $(cat "$T/bad.out")"
[ "$(ctl count u)" = 0 ] || fail "a failed load left $(ctl count u) cells"
# A cell of a family the table lacks: refused, the load fails whole.
{
	head -n 3000 "$T/load.tsv"
	printf 'r99999\tnofam\tq\t1\tv\n'
} >"$T/nofam.tsv"
if ctl import --bulk u "$T/nofam.tsv" >"$T/nofam.out" 2>&1; then
	fail "import --bulk with a cell of no family succeeded"
fi
grep -q 'no family' "$T/nofam.out" || fail "no 'no family' in: $(cat "$T/nofam.out")"
[ "$(ctl count u)" = 0 ] || fail "a refused cell left $(ctl count u) cells"
echo "a bad line or a refused cell fails the whole load, nothing visible"

# The serving server killed (-9) in the middle of a load: the load
# fails, and once the other server serves, all or none of it is there.
mkfifo "$T/feed"
ctl import --bulk u - <"$T/feed" >"$T/killed.out" 2>&1 &
importer=$!
exec 3>"$T/feed"
sed 's/^r/k/' "$T/load.tsv" >&3	# 1.3 MB: batches reached the server
sleep 0.5
victim=$(cell_serving_pid)
[ -n "$victim" ] || fail "nobody holds the store"
kill -9 "$victim"
t0=$(now_ms)
# The importer may have failed already: then this write ends in SIGPIPE.
sed 's/^r/l/' "$T/load.tsv" >&3 2>/dev/null || :
exec 3>&-
if wait "$importer"; then
	fail "import --bulk went on after its server was killed"
fi
grep -q -e 'load is gone' -e 'outcome is unknown' "$T/killed.out" ||
    fail "the failed import says: $(cat "$T/killed.out")"
n=$(ctl count u)	# waits for the next server, within its deadline
case $n in
0 | 24000) ;;
*) fail "after the kill, $n cells of a load of 24000 are visible" ;;
esac
echo "server killed during a load: import failed ($(head -c 160 \
    "$T/killed.out" | tr '\n' ' ')); $n of 24000 visible after" \
    "$(( $(now_ms) - t0 )) ms"

# Clients killed (-9) in the middle of their loads: their connections
# close and the server aborts their loads.  It keeps at most 4 open, so
# a load after 4 killed ones commits only once those were aborted.
pids=""
for i in 3 4 5 6; do
	mkfifo "$T/feed$i"
	# Not through ctl(): $! must be tabletctl itself, not a subshell.
	"$TABLETCTL" -s "$CELL" import --bulk u - <"$T/feed$i" \
	    >/dev/null 2>&1 &
	pids="$pids $!"
	eval "exec $i>\"\$T/feed$i\""
	# Returns once read: the load was open before the first line.
	sed "s/^r/m$i/" "$T/load.tsv" >&"$i"
done
kill -9 $pids
for i in 3 4 5 6; do
	eval "exec $i>&-"
done
for p in $pids; do
	wait "$p" 2>/dev/null || :
done
printf 'z1\tf\tq\t1\tlast\n' >"$T/last.tsv"
t0=$(now_ms)
until ctl import --bulk u "$T/last.tsv" 2>"$T/last.err"; do
	grep -q 'bulk loads open' "$T/last.err" ||
	    fail "a load after killed clients: $(cat "$T/last.err")"
	[ $(( $(now_ms) - t0 )) -lt 5000 ] ||
	    fail "the killed clients' loads were not aborted within 5 s"
	sleep 0.2
done
echo "4 clients killed during their loads: aborted with their" \
    "connections, a new load committed after $(( $(now_ms) - t0 )) ms"
n=$(ctl count u)
[ "$n" = 1 ] || [ "$n" = 24001 ] ||
    fail "after killed clients' loads, $n cells are visible"
cell_ok=1
