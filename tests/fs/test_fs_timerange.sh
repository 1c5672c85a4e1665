#!/bin/sh
# test_fs_timerange.sh - QUALIFIER/@T1..T2/, the versions of a column with
# T1 <= ts < T2 (issue 29), through real ls, cat, find and stat: exactly
# those versions, newest first, with their values, sizes and mtimes;
# not listed by ls of the column (as @TS is not); an empty range is an
# empty directory, a range that holds no time (T2 <= T1) or a malformed
# name does not exist; a version outside the range is not found in it;
# and nothing in it can be written, removed or made (EROFS).
set -eu
. "${top_srcdir:?}/tests/fs/lib.sh"

fs_webtable
fs_mount

C=$M/webtable/com.cnn.www/contents/%
mkdir -p "$C"
for t in 1000000000000001 1000000000000003 1000000000000005; do
	echo "<html>$t" > "$C/$t"
done
R=$C/@1000000000000002..1000000000000005

check_eq "ls of a range: T1 <= ts < T2, newest first" \
    "$(ls -U "$R" | tr '\n' ' ')" "1000000000000003 "
check_eq "a wider range" \
    "$(ls -U "$C/@1000000000000001..1000000000000006" | tr '\n' ' ')" \
    "1000000000000005 1000000000000003 1000000000000001 "
check_eq "the end is excluded" \
    "$(ls -U "$C/@1000000000000001..1000000000000005" | tr '\n' ' ')" \
    "1000000000000003 1000000000000001 "
check_eq "cat a version in the range" \
    "$(cat "$R/1000000000000003")" "<html>1000000000000003"
check_eq "its size" "$(stat -c %s "$R/1000000000000003")" 23
check_eq "its mtime is its time" "$(stat -c %Y "$R/1000000000000003")" \
    1000000000
check_eq "read-only file" "$(stat -c %A "$R/1000000000000003")" "-r--r--r--"
check_eq "read-only directory" "$(stat -c %A "$R")" "dr-xr-xr-x"
check_eq "find walks it" "$(cd "$C/@0..1000000000000004" && find . -type f |
    sort | tr '\n' ' ')" "./1000000000000001 ./1000000000000003 "
check_eq "cat of every version in it" \
    "$(cat "$C/@1000000000000003..1000000000000006"/* | tr '\n' ' ')" \
    "<html>1000000000000003 <html>1000000000000005 "
check_eq "the column's ls does not list ranges" \
    "$(ls -a "$C" | grep -c '@' || :)" 0
check_eq "an empty range is an empty directory" \
    "$(ls -A "$C/@7..9" | wc -l)" 0
[ -d "$C/@7..9" ] || fail "an empty range is not a directory"

[ ! -e "$C/@5..5" ] || fail "a range without time exists"
[ ! -e "$C/@6..5" ] || fail "a backwards range exists"
[ ! -e "$C/@1..x" ] || fail "a malformed range exists"
[ ! -e "$C/@01..5" ] || fail "a non-canonical range exists"
[ ! -e "$R/1000000000000001" ] || fail "a version before the range in it"
[ ! -e "$R/1000000000000005" ] || fail "the end version in the range"
[ ! -e "$R/1000000000000004" ] || fail "a missing version in the range"
[ ! -e "$M/webtable/com.cnn.www/contents/nothere/@1..5" ] ||
    fail "a range of a column that does not exist"

expect_fail "Read-only file system" sh -c "echo x > '$R/1000000000000003'"
expect_fail "Read-only file system" sh -c "echo x > '$R/1000000000000004'"
expect_fail "Read-only file system" rm "$R/1000000000000003"
expect_fail "Read-only file system" mkdir "$R/x"
expect_fail "Read-only file system" rmdir "$R"
expect_fail "Read-only file system" mv "$R/1000000000000003" \
    "$C/1000000000000009"
check_eq "the version is still there" \
    "$(cat "$C/1000000000000003")" "<html>1000000000000003"

# A write to the column shows in a range read afterwards.
echo "<html>4" > "$C/1000000000000004"
check_eq "a new version in the range" "$(ls -U "$R" | tr '\n' ' ')" \
    "1000000000000004 1000000000000003 "
check_eq "and its value" "$(cat "$R/1000000000000004")" "<html>4"
