#!/bin/sh
# test_fs_bigtable.sh - a table of 100,000 rows imported with tabletctl is
# listed completely by ls, in the order of sort(1) under LC_ALL=C, and
# its .tablets lines cover the whole table.
set -eu
. "${top_srcdir:?}/tests/fs/lib.sh"

N=100000
fs_webtable
# Keys of varying length so that byte order differs from number order.
awk -v n=$N 'BEGIN { for (i = 0; i < n; i++)
    printf "k%d\tanchor\tq\t1\tv%d\n", i * 7919 % n, i }' > "$T/import"
ctl import webtable "$T/import"
cut -f1 "$T/import" | LC_ALL=C sort > "$T/want"
fs_mount

check_eq "ls | wc -l" "$(ls "$M/webtable" | wc -l)" $N
LC_ALL=C ls "$M/webtable" > "$T/got"
cmp "$T/got" "$T/want" || fail "ls differs from the sorted keys"
check_eq "one value" "$(cat "$M/webtable/k4242/anchor/q/1")" \
    "v$(awk 'BEGIN { for (i = 0; i < 100000; i++)
    if (i * 7919 % 100000 == 4242) print i }')"

# .tablets: from the start ("-") to the end ("-") without gaps.
awk 'NR == 1 && $1 != "-" { exit 1 }
    NR > 1 && $1 != end { exit 1 }
    { end = $2 } END { if (end != "-") exit 1 }' "$M/webtable/.tablets" ||
    fail ".tablets: $(cat "$M/webtable/.tablets")"
