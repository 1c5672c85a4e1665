#!/bin/sh
# test_fs_concurrent.sh - four shell loops write different columns of one
# row at the same time (explicit versions and latest); afterwards every
# value is there, and the row reads whole.  Then a writer in a column
# while another process renames the column back and forth: no write is
# lost or splits the column, no rename fails, and a third process that
# stats the column and its latest (in its cwd) never sees them vanish.
# Last, creates, unlinks, mkdirs and rmdirs inside a family while another
# process renames it back and forth: each acts where the family is at that
# moment, never at the name it just left.
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

# Creates, unlinks, mkdirs and rmdirs by name inside a family (each
# process's cwd is in it, so every name resolves wherever the family is)
# while another process renames the family back and forth.  A request
# that resolved the family's old name just before a rename and acted
# after it would write, delete or make at that old name: a version or a
# pending directory stranded there (the next rename onto it fails with
# ENOTEMPTY, and it shows beside the family), an unlink or rmdir that
# fails, or one that succeeds and leaves its name in place.
if command -v python3 >/dev/null 2>&1; then
	OPS=$((N * 3))
	ctl createtable u families=f,g
	U=$M/u/r
	mkdir -p "$U/f/c"
	i=1
	while [ $i -le $OPS ]; do
		echo "old$i" > "$U/f/c/$i"
		i=$((i + 1))
	done
	# The kernel looks every version up: a rename then moves that many
	# nodes, which is when a request may resolve the old name.
	ls -l "$U/f/c" >/dev/null
	: > "$T/ops.err"
	# $1: what the loop is (its ready file); $2: its directory; $3: the
	# command run with each i (a shell function below).
	ops_loop() {
		(
			cd "$2" || exit 1
			: > "$T/ready.$1"
			while [ ! -e "$T/go" ]; do
				sleep 0.01
			done
			i=1
			while [ $i -le $OPS ]; do
				$3 $i 2>>"$T/ops.err" ||
				    echo "$1 $i failed" >> "$T/ops.err"
				i=$((i + 1))
			done
		) &
	}
	op_create() { echo "new$1" > "$((100000 + $1))"; }
	op_unlink() { rm "$1"; }
	op_dirs() { mkdir "d$1" && rmdir "d$1" && mkdir "k$1"; }
	ops_loop create "$U/f/c" op_create
	creator=$!
	ops_loop unlink "$U/f/c" op_unlink
	unlinker=$!
	ops_loop dirs "$U/f" op_dirs
	dirs=$!
	i=0
	while [ ! -e "$T/ready.create" ] || [ ! -e "$T/ready.unlink" ] ||
	    [ ! -e "$T/ready.dirs" ]; do
		i=$((i + 1))
		[ $i -le 500 ] || fail "the loops did not start"
		sleep 0.01
	done
	python3 - "$U/f" "$U/g" "$T/go" "$T/stop" > "$T/renames" 2>&1 <<'PY' &
import os, sys, time
a, b, go, stop = sys.argv[1:]
open(go, "w").close()
count = 0
while not os.path.exists(stop):
    for s, d in ((a, b), (b, a)):
        try:
            os.rename(s, d)
            count += 1
        except OSError as e:
            print(s, d, os.strerror(e.errno))
        # The lock prefers writers: without a pause, renames one after
        # another would hold the other requests back for minutes.
        time.sleep(0.002)
print("renamed", count, file=sys.stderr)
PY
	renamer=$!
	wait "$creator" || fail "the creator failed"
	wait "$unlinker" || fail "the unlinker failed"
	wait "$dirs" || fail "the mkdir loop failed"
	: > "$T/stop"
	wait "$renamer" || fail "the renamer failed"
	check_eq "operations that failed" "$(cat "$T/ops.err")" ""
	check_eq "renames of the family that failed" \
	    "$(grep -v '^renamed' "$T/renames" | sort | uniq -c)" ""
	grep -q '^renamed [1-9]' "$T/renames" || fail "no rename happened"
	check_eq "the row holds the family alone" "$(ls "$U")" "f"
	: > "$T/want"
	i=1
	while [ $i -le $OPS ]; do
		echo "$((100000 + i))" >> "$T/want"
		i=$((i + 1))
	done
	ls "$U/f/c" | sort > "$T/got"
	cmp -s "$T/got" "$T/want" || fail "versions, every created one and \
no unlinked one: $(diff "$T/want" "$T/got" | grep '^[<>]' | head -5)"
	(cd "$U/f/c" && cat $(cat "$T/want")) > "$T/got"
	sed 's/^10*/new/' "$T/want" > "$T/want.values"
	cmp "$T/got" "$T/want.values" || fail "created values differ"
	: > "$T/want"
	i=1
	while [ $i -le $OPS ]; do
		echo "k$i" >> "$T/want"
		i=$((i + 1))
	done
	echo c >> "$T/want"
	ls "$U/f" | sort > "$T/got"
	sort "$T/want" > "$T/want.sorted"
	cmp -s "$T/want.sorted" "$T/got" || fail "directories, every kept \
one and no removed one: $(diff "$T/want.sorted" "$T/got" | grep '^[<>]' |
	    head -5)"
	check_eq "the engine's cells of g" "$(ctl read u columns=g |
	    grep -c '^  g:' || :)" 0
	check_eq "the engine's cells of f" "$(ctl read u columns=f |
	    grep -c '^  f:c @' || :)" $OPS
fi
