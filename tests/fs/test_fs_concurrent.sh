#!/bin/sh
# test_fs_concurrent.sh - four shell loops write different columns of one
# row at the same time (explicit versions and latest); afterwards every
# value is there, and the row reads whole.  Then a writer in a column
# while another process renames the column back and forth: no write is
# lost or splits the column, no rename fails, and a third process that
# stats the column and its latest (in its cwd) never sees them vanish.
set -eu
. "${top_srcdir:?}/tests/fs/lib.sh"

# Under the sanitizers (TEST_SMALL) the loops are 30 % as long.
N=100
if [ -n "${TEST_SMALL:-}" ]; then
	N=30
fi
WRITES=$((N * 3))	# the writer's, beside STATS stats and RENAMES renames
STATS=$((N * 30))
RENAMES=$((N * 2))
ctl init
ctl createtable t families=f
# No attribute cache: every stat reaches the daemon.
fs_mount -o cache_timeout=0
R=$M/t/shared
for k in 1 2 3 4; do
	mkdir -p "$R/f/c$k"
done

pids=
for k in 1 2 3 4; do
	(
		i=1
		while [ $i -le $N ]; do
			echo "w$k-$i" > "$R/f/c$k/$i"
			i=$((i + 1))
		done
		echo "last$k" > "$R/f/c$k/latest"
	) &
	pids="$pids $!"
done
for p in $pids; do
	wait "$p" || fail "writer $p failed"
done

for k in 1 2 3 4; do
	check_eq "c$k versions" "$(ls "$R/f/c$k" | wc -l)" $((N + 1))
	check_eq "c$k latest" "$(cat "$R/f/c$k/latest")" "last$k"
	i=1
	: > "$T/want"
	while [ $i -le $N ]; do
		echo "w$k-$i" >> "$T/want"
		i=$((i + 1))
	done
	(cd "$R/f/c$k" && cat $(seq $N)) > "$T/got"
	cmp "$T/got" "$T/want" || fail "c$k values differ"
done
check_eq "columns" "$(ls "$R/f" | tr '\n' ' ')" "c1 c2 c3 c4 "

# A writer in a column (its cwd) while another process renames the column
# back and forth: every write lands in the column wherever it is then,
# none splits it across the two names (which would make the next rename
# fail with ENOTEMPTY), and no rename fails.
if command -v python3 >/dev/null 2>&1; then
	mkdir -p "$R/f/a"
	echo 0 > "$R/f/a/latest"
	(cd "$R/f/a" && python3 - "$WRITES" <<'PY') &
import sys
for i in range(1, int(sys.argv[1]) + 1):
    with open("latest", "w") as f:
        f.write("%d\n" % i)
PY
	writer=$!
	# A rename keeps the column's inode, so the process can name its
	# cwd throughout (no getcwd warning on stderr either).
	(cd "$R/f/a" && python3 - "$STATS" <<'PY') > "$T/stats" 2>"$T/stats.err" &
import os, sys
for i in range(int(sys.argv[1])):
    for name in ("latest", "."):
        try:
            os.stat(name)
        except OSError as e:
            print(name, os.strerror(e.errno))
PY
	stats=$!
	python3 - "$R/f/a" "$R/f/b" "$RENAMES" > "$T/renames" 2>&1 <<'PY' &
import os, sys
a, b = sys.argv[1], sys.argv[2]
for i in range(int(sys.argv[3])):
    for s, d in ((a, b), (b, a)):
        try:
            os.rename(s, d)
        except OSError as e:
            print(os.strerror(e.errno))
PY
	renamer=$!
	wait "$writer" || fail "the writer failed"
	wait "$renamer"
	wait "$stats" || { cat "$T/stats.err" >&2; fail "the stats failed"; }
	check_eq "renames that failed" "$(sort "$T/renames" | uniq -c)" ""
	check_eq "stats that failed" "$(sort "$T/stats" | uniq -c)" ""
	check_eq "warnings of the stats" "$(cat "$T/stats.err")" ""
	check_eq "the column is whole" "$(ls "$R/f/a" | wc -l)" $((WRITES + 1))
	[ ! -e "$R/f/b" ] || fail "a write recreated the other name"
fi
