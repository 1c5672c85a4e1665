#!/bin/sh
# test_fs_webtable.sh - the paper's Webtable row written with echo and read
# back with cat and ls: exact versions by name, latest, @TS, newest-first
# listings, st_size and st_mtime of a version, the maxversions=3 policy,
# and the same data seen by tabletctl.
set -eu
. "${top_srcdir:?}/tests/fs/lib.sh"

fs_webtable
fs_mount

R=$M/webtable/com.cnn.www
# A new row and column: mkdir -p, then the first write.
mkdir -p "$R/contents/%" "$R/anchor/cnnsi.com" "$R/anchor/my.look.ca"
echo "<html>t3" > "$R/contents/%/1000000000000003"
echo "<html>t5" > "$R/contents/%/1000000000000005"
echo "<html>t6" > "$R/contents/%/1000000000000006"
echo CNN > "$R/anchor/cnnsi.com/1000000000000009"
echo CNN.com > "$R/anchor/my.look.ca/1000000000000008"

check_eq "tables" "$(ls "$M")" "webtable"
check_eq "rows" "$(ls "$M/webtable")" "com.cnn.www"
check_eq "families" "$(ls "$R" | tr '\n' ' ')" "anchor contents "
check_eq "anchors" "$(ls "$R/anchor" | tr '\n' ' ')" "cnnsi.com my.look.ca "
check_eq "versions newest first" "$(ls -f "$R/contents/%" | grep -v '^\.' |
    tr '\n' ' ')" "1000000000000006 1000000000000005 1000000000000003 "
check_eq "ls -U newest first" "$(ls -U "$R/contents/%" | tr '\n' ' ')" \
    "1000000000000006 1000000000000005 1000000000000003 "

check_eq "cat t3" "$(cat "$R/contents/%/1000000000000003")" "<html>t3"
check_eq "cat latest" "$(cat "$R/contents/%/latest")" "<html>t6"
check_eq "cat @t5" "$(cat "$R/contents/%/@1000000000000005")" "<html>t5"
check_eq "cat @t4" "$(cat "$R/contents/%/@1000000000000004")" "<html>t3"
check_eq "anchor" "$(cat "$R/anchor/cnnsi.com/latest")" "CNN"
[ ! -e "$R/contents/%/@1000000000000002" ] || fail "@ before any version"
[ ! -e "$R/contents/%/1000000000000004" ] || fail "missing version exists"

# Attributes: exact size, mtime = the version's time, modes.
check_eq "size" "$(stat -c %s "$R/anchor/my.look.ca/1000000000000008")" 8
check_eq "mtime" "$(stat -c %Y "$R/contents/%/1000000000000005")" 1000000000
check_eq "latest mtime" "$(stat -c %Y "$R/contents/%/latest")" 1000000000
check_eq "mode" "$(stat -c %a "$R/contents/%/1000000000000005")" 644
check_eq "@ mode" "$(stat -c %a "$R/contents/%/@1000000000000005")" 444
check_eq "increment mode" "$(stat -c %a "$R/contents/%/increment")" 200
check_eq "dir mode" "$(stat -c %a "$R/contents")" 755
check_eq "blocks" "$(stat -c %b "$R/anchor/my.look.ca/1000000000000008")" 1

# latest is server-stamped: newer than all, and listed.
echo "<html>now" > "$R/contents/%/latest"
check_eq "new latest" "$(cat "$R/contents/%/latest")" "<html>now"
check_eq "stat latest size" "$(stat -c %s "$R/contents/%/latest")" 10
now=$(date +%s)
ts=$(stat -c %Y "$R/contents/%/latest")
[ $((now - ts)) -le 5 ] || fail "server stamp $ts far from now $now"
# maxversions=3 keeps the three newest.
check_eq "gc" "$(ls "$R/contents/%" | wc -l)" 3
[ ! -e "$R/contents/%/1000000000000003" ] || fail "condemned version shown"

# Overwrite an exact version (a put at the same time) and : > (empty).
echo "<html>t5b" > "$R/contents/%/1000000000000005"
check_eq "overwrite" "$(cat "$R/contents/%/1000000000000005")" "<html>t5b"
: > "$R/anchor/cnnsi.com/1000000000000009"
check_eq "empty size" "$(stat -c %s "$R/anchor/cnnsi.com/1000000000000009")" 0

# The same cells through the API.
fs_unmount
ctl lookup webtable com.cnn.www columns=anchor:my.look.ca >"$T/out"
grep -q "CNN.com" "$T/out" || fail "tabletctl lookup: $(cat "$T/out")"
