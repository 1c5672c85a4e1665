#!/bin/sh
# test_fs_concurrent.sh - four shell loops write different columns of one
# row at the same time (explicit versions and latest); afterwards every
# value is there, and the row reads whole.
set -eu
. "${top_srcdir:?}/tests/fs/lib.sh"

N=100
ctl init
ctl createtable t families=f
fs_mount
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
