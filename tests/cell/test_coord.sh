#!/bin/sh
# test_coord.sh - src/coord against a real ZooKeeper: starts one with
# scripts/zk in a temporary directory (stopped in an EXIT trap, even on
# failure, and thawed first should the lease test have frozen it), then
# runs tests/unit/test_coord against it and passes on its TAP output.
# Skips (77) where java or the ZooKeeper jars are missing.
# COORD_TEST_WRAPPER, when set, runs the program under it (valgrind).
set -eu
: "${top_builddir:?top_builddir must be set}"
: "${top_srcdir:?top_srcdir must be set}"
PROG=$top_builddir/tests/unit/test_coord
ZK=$top_srcdir/scripts/zk

skip() {
	echo "SKIP: $*" >&2
	exit 77
}
command -v java >/dev/null 2>&1 || skip "no java"
[ -f /usr/share/java/zookeeper.jar ] || skip "no ZooKeeper (package zookeeper)"
command -v nc >/dev/null 2>&1 || skip "no nc (package netcat-openbsd)"
[ -x "$PROG" ] || { echo "FAIL: $PROG not built" >&2; exit 1; }

T=$(mktemp -d "${TMPDIR:-/tmp}/tabletfs-coord.XXXXXX")
cleanup() {
	if [ -f "$T/zk/pid" ]; then
		kill -CONT "$(cat "$T/zk/pid")" 2>/dev/null || :
	fi
	"$ZK" stop "$T/zk" || :
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' HUP INT TERM

hostport=$("$ZK" start "$T/zk")
TABLETFS_TEST_ZK=$hostport
TABLETFS_TEST_ZK_PID=$(cat "$T/zk/pid")
export TABLETFS_TEST_ZK TABLETFS_TEST_ZK_PID
echo "ZooKeeper at $hostport (pid $TABLETFS_TEST_ZK_PID)"
# shellcheck disable=SC2086
${COORD_TEST_WRAPPER:-} "$PROG" >"$T/tap" 2>"$T/stderr" || status=$?
cat "$T/tap"
# The client's error lines (connection timed out while frozen) are
# expected; show them only when something failed.
status=${status:-0}
if grep -q '^not ok' "$T/tap" || [ "$status" -ne 0 ]; then
	echo "--- stderr:"
	cat "$T/stderr"
	exit 1
fi
grep -q '^1\.\.[1-9]' "$T/tap" || { echo "FAIL: no TAP plan"; exit 1; }
