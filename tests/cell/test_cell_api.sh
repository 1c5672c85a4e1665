#!/bin/sh
# The API suites, run again against a cell of three tablet servers
# through the client library (tests/unit/api_util.c opens the cell named
# by TABLETFS_TEST_CELL instead of a store of its own): the same calls
# must give the same results and errors over RPC as embedded.  The
# suites' tests that need an embedded store's clock, faults, files or
# options skip on a cell and say why (tstore_cell_skip).  Then
# tabletbench's cell engine runs its workloads through the client.
set -eu
# No failover here: sessions long enough that a loaded machine (make
# check runs tests side by side) does not end the servers' leases.
SESSION_MS=${SESSION_MS:-10000}
. "$(dirname "$0")/lib.sh"

# Under the sanitizers (TEST_SMALL) three of them, those with threads
# and scans among them: each call is a round trip there, and slow.
if [ -n "${TEST_SMALL:-}" ]; then
	ALL="test_api_webtable test_api_scan test_api_concurrency
	    test_api_filter"
else
	ALL="test_api_webtable test_api_gc test_api_delete test_api_scan
	    test_api_split test_api_move test_api_model test_api_concurrency
	    test_api_point test_api_filter test_api_mutate_rows test_access"
	# A bulk load goes whole to the root's server, which fails its
	# commit once the table's tablets are spread (issue 26).
	ALL="$ALL test_api_usage"
	[ -n "${CELL_API_SPREAD:-}" ] || ALL="$ALL test_api_bulk"
fi
SUITES="${CELL_API_SUITES:-$ALL}"

cell_start 3
# status names the master, the serving server and the three servers.
ctl status >"$T/status"
grep -q '^master  *pid [0-9]* on ' "$T/status" || fail "status: no master"
grep -q '^servers  *3$' "$T/status" || fail "status: not 3 servers"
serving=$(grep -c '^server  *127.0.0.1:[0-9]* serving tablets=[0-9]*$' \
    "$T/status") || :
if [ -n "${CELL_API_SPREAD:-}" ]; then
	[ "$serving" -ge 1 ] || fail "status: no serving server"
else
	[ "$serving" -eq 1 ] || fail "status: not one serving server"
fi
failed=""
for t in $SUITES; do
	bin=$top_builddir/tests/unit/$t
	[ -x "$bin" ] || fail "$t is not built"
	if TABLETFS_TEST_CELL=$CELL TABLETFS_TEST_CELL_STORAGE=$C/storage \
	    "$bin" >"$T/$t.tap" 2>&1; then
		echo "$t: $(grep -c '^ok' "$T/$t.tap") passed on the cell"
	else
		grep -E '^not ok|^Bail|^#' "$T/$t.tap" | head -20 >&2
		failed="$failed $t"
	fi
done
[ -z "$failed" ] || fail "on the cell:$failed"
if [ -n "${CELL_API_SPREAD:-}" ]; then
	moves=$(cat "$C"/logs/master-*.log | grep -c 'moved from') || :
	[ "$moves" -gt 0 ] || fail "spread: the master moved no tablet"
	echo "spread: the master moved tablets $moves times during the suites"
fi

# tabletbench's cell engine: the db_bench workloads through the client.
# tabletbench runs each engine in a forked child that starts threads,
# which ThreadSanitizer cannot follow (as tests/ctl/test_tabletbench.sh).
if grep -q -- '-fsanitize=thread' "$top_builddir/Makefile" 2>/dev/null; then
	echo "tabletbench --cell: not run under ThreadSanitizer"
	cell_ok=1
	exit 0
fi
"$top_builddir/src/bench/tabletbench" --cell "$CELL" --engines cell \
    --num 2000 --reads 2000 --seeks 200 --runs 1 \
    --benchmarks fillseq,fillrandom,readrandom,readseq,seekrandom,increment \
    >"$T/bench.out" 2>&1 || { cat "$T/bench.out" >&2; fail "tabletbench --cell"; }
grep -q 'readrandom' "$T/bench.out" || fail "tabletbench --cell printed no readrandom"
echo "tabletbench --cell ran its workloads"
cell_ok=1
