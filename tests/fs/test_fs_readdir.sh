#!/bin/sh
# test_fs_readdir.sh - a table's listing streams from a scan: 20000 rows
# listed exactly once each and in key order, with ls -f and
# readdirplus-driven ls -l; rows added while a listing runs appear at most
# once and no old row is lost; pending (mkdir'd) rows merge into place.
set -eu
. "${top_srcdir:?}/tests/fs/lib.sh"

N=20000
fs_webtable
awk -v n=$N 'BEGIN { for (i = 0; i < n; i++)
    printf "row%06d\tanchor\tq\t1\tv%d\n", i, i }' > "$T/import"
ctl import webtable "$T/import"
awk -v n=$N 'BEGIN { for (i = 0; i < n; i++) printf "row%06d\n", i }' \
    > "$T/want"
fs_mount

W=$M/webtable
ls -f "$W" | grep -v '^\.' > "$T/got"
cmp "$T/got" "$T/want" || fail "ls -f: $(wc -l < "$T/got") rows"
check_eq "ls -l" "$(ls -l "$W" | grep -c '^d')" $N

# Pending rows merge into key order.
mkdir "$W/row010000x" "$W/a-first"
ls -U "$W" > "$T/got"
check_eq "first" "$(head -n 1 "$T/got")" "a-first"
grep -n -x -e row010000 -e row010000x -e row010001 "$T/got" | cut -d: -f2 |
    tr '\n' ' ' > "$T/order"
check_eq "merged" "$(cat "$T/order")" "row010000 row010000x row010001 "
rmdir "$W/row010000x" "$W/a-first"

# Rows added during a listing: each row at most once, no old row lost.
(
	i=0
	while [ $i -lt 200 ]; do
		mkdir -p "$W/row0$i-new/anchor/q"
		echo x > "$W/row0$i-new/anchor/q/latest"
		i=$((i + 1))
	done
) &
writer=$!
ls -f "$W" | grep -v '^\.' > "$T/got"
wait $writer
sort "$T/got" | uniq -d > "$T/dups"
[ ! -s "$T/dups" ] || fail "listed twice: $(head "$T/dups")"
grep -v -- -new "$T/got" > "$T/old"
cmp "$T/old" "$T/want" || fail "lost rows during additions"
