#!/bin/sh
# test_env_rados.sh - the file environment on Ceph RADOS: starts a
# throwaway cluster with scripts/ceph in a temporary directory (stopped
# and removed in an EXIT trap, even on failure), then runs the env's
# unit tests against it (test_env and test_sqlite_env, which run their
# posix and in-memory parts too, test_rados_store, a store on RADOS end
# to end, and test_rpc_secret, a cell's secret kept there) with
# TABLETFS_TEST_RADOS=CONF:POOL, and passes on their TAP output.  Skips (77) where Ceph is not installed or the
# build has no librados.  RADOS_TEST_WRAPPER, when set, runs each
# program under it (valgrind).
set -eu
: "${top_builddir:?top_builddir must be set}"
: "${top_srcdir:?top_srcdir must be set}"
CEPH=$top_srcdir/scripts/ceph
PROGS="test_env test_sqlite_env test_rados_store test_rpc_secret"

skip() {
	echo "SKIP: $*" >&2
	exit 77
}
for tool in ceph-mon ceph-osd ceph rados; do
	command -v $tool >/dev/null 2>&1 ||
	    skip "no $tool (scripts/install-deps --ceph)"
done
grep -q -- '-DHAVE_RADOS=1' "$top_builddir/Makefile" ||
    skip "built without librados (install librados-dev, configure again)"
# librados and libceph-common are not built with ThreadSanitizer: their
# own threads give it races and mutex misuse it cannot see through (in
# EventCenter, in std::string copies between msgr-worker threads), none
# in our frames.  The ASan and valgrind runs still run this test.
! grep -q -- '-fsanitize=thread' "$top_builddir/Makefile" ||
    skip "librados is not built for ThreadSanitizer"
for p in $PROGS; do
	[ -x "$top_builddir/tests/unit/$p" ] ||
	    { echo "FAIL: tests/unit/$p not built" >&2; exit 1; }
done

T=$(mktemp -d "${TMPDIR:-/tmp}/tabletfs-rados.XXXXXX")
cleanup() {
	"$CEPH" stop --dir "$T/ceph" || :
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' HUP INT TERM

started=$(date +%s.%N)
set -- $("$CEPH" start --dir "$T/ceph")
echo "# Ceph up in $(awk "BEGIN { print $(date +%s.%N) - $started }") s: conf $1 pool $2"
TABLETFS_TEST_RADOS=$1:$2
export TABLETFS_TEST_RADOS
status=0
for p in $PROGS; do
	echo "# $p"
	rc=0
	# shellcheck disable=SC2086
	${RADOS_TEST_WRAPPER:-} "$top_builddir/tests/unit/$p" >"$T/tap" \
	    2>"$T/stderr" || rc=$?
	cat "$T/tap"
	if grep -q '^not ok' "$T/tap" || [ "$rc" -ne 0 ] ||
	    ! grep -q '^1\.\.[1-9]' "$T/tap"; then
		echo "FAIL: $p (exit $rc); stderr:"
		cat "$T/stderr"
		status=1
	fi
done
exit $status
