#!/bin/sh
# The mount tests of the everyday tools, run again on a mount of a cell
# of three tablet servers (tests/fs/lib.sh uses the cell named by
# TABLETFS_TEST_CELL instead of a store of its own): install, tar -x,
# rsync, sed -i, editors' saves, two shells appending, cp -a, find, du,
# renames and odd names must behave through the client library exactly
# as on an embedded store.
set -eu
# No failover here: sessions long enough that a loaded machine (make
# check runs tests side by side) does not end the servers' leases.
SESSION_MS=${SESSION_MS:-10000}
. "$(dirname "$0")/lib.sh"

[ -c /dev/fuse ] || skip "no /dev/fuse"
if [ -n "${TEST_SMALL:-}" ]; then
	ALL="test_fs_replace test_fs_write"
else
	ALL="test_fs_replace test_fs_tools test_fs_write test_fs_shell
	    test_fs_rename test_fs_webtable test_fs_concurrent test_fs_names
	    test_fs_walk test_fs_readdir test_fs_longnames test_fs_large
	    test_fs_access"
fi
TESTS_RUN="${CELL_FS_TESTS:-$ALL}"

cell_start 3
failed=""
for t in $TESTS_RUN; do
	if TABLETFS_TEST_CELL=$CELL sh "$top_srcdir/tests/fs/$t.sh" \
	    >"$T/$t.out" 2>&1; then
		echo "$t: passed on the cell"
	else
		rc=$?
		if [ $rc -eq 77 ]; then
			echo "$t: $(grep SKIP "$T/$t.out")"
			continue
		fi
		tail -n 15 "$T/$t.out" >&2
		failed="$failed $t"
	fi
done
[ -z "$failed" ] || fail "on the cell:$failed"
cell_ok=1
