#!/bin/sh
# test_fs_names.sh - row keys and qualifiers with odd bytes round-trip
# between the escaped path names and the stored bytes: a space, '%', '/'
# (written %2F), '@', UTF-8, a control byte 0x01 (%01), a leading dot, the
# empty qualifier (%), and lower-case hex accepted on lookup; names over
# 255 bytes are refused (ENAMETOOLONG).
set -eu
. "${top_srcdir:?}/tests/fs/lib.sh"

fs_webtable
fs_mount

W=$M/webtable
for r in "a b" "100%25" "a%2Fb" "x%40y" "héllo" "ctl%01x" "%2Edot"; do
	mkdir -p "$W/$r/anchor/%"
	echo "$r" > "$W/$r/anchor/%/1"
done
mkdir -p "$W/q/anchor/sp ace" "$W/q/anchor/%2F" "$W/q/anchor/日本"
echo v > "$W/q/anchor/sp ace/1"
echo v > "$W/q/anchor/%2F/1"
echo v > "$W/q/anchor/日本/1"

# Listings are canonical and sorted by the raw bytes.
ls -U "$W" > "$T/rows"
printf '%s\n' "%2Edot" "100%25" "a b" "a%2Fb" "ctl%01x" "héllo" "q" \
    "x%40y" > "$T/want"
cmp "$T/rows" "$T/want" || fail "rows: $(cat "$T/rows")"
check_eq "qualifiers" "$(ls -U "$W/q/anchor" | tr '\n' '|')" "%2F|sp ace|日本|"
check_eq "empty qualifier" "$(ls "$W/a b/anchor")" "%"

# Lower-case hex reaches the same key; non-canonical names list canonical.
check_eq "lower hex" "$(cat "$W/a%2fb/anchor/%/1")" "a%2Fb"
check_eq "%41 is A" "$(ls "$W/%71/anchor" | tr '\n' ' ')" "%2F sp ace 日本 "
# Undecodable names: ENOENT on lookup, EINVAL on create.
expect_fail "No such file" ls "$W/bad%zz"
expect_fail "Invalid argument" mkdir "$W/bad%zz"
expect_fail "Invalid argument" mkdir "$W/a@b"
# A name of 255 bytes (statfs's f_namemax) is made and listed; a longer
# one, which FUSE would pass (up to 1024 bytes) but no listing carries, is
# refused on lookup, create and rename, so nothing is made that cannot be
# seen.
n255=$(printf '%0255d' 0)
n256=$(printf '%0256d' 0)
mkdir -p "$W/long/anchor/$n255"
echo v > "$W/long/anchor/$n255/1"
check_eq "255 listed" "$(ls "$W/long/anchor")" "$n255"
expect_fail "File name too long" mkdir -p "$W/long/anchor/$n256"
expect_fail "File name too long" mkdir "$W/$n256"
expect_fail "File name too long" ls "$W/long/anchor/$n256"
expect_fail "File name too long" mv "$W/long/anchor/$n255" \
    "$W/long/anchor/$n256"
check_eq "nothing long made" "$(ls "$W/long/anchor")" "$n255"

# The bytes stored are the decoded ones.
fs_unmount
ctl export webtable > "$T/export"
grep -q "^a/b	anchor		1	" "$T/export" || fail "a/b: $(cat "$T/export")"
grep -q "^a b	anchor" "$T/export" || fail "space row"
grep -q '^ctl\\x01x	anchor' "$T/export" || fail "0x01 row: $(cat "$T/export")"
grep -q '^h\\xc3\\xa9llo	anchor' "$T/export" || fail "utf-8 row"
grep -q "^\.dot	anchor" "$T/export" || fail "dot row"
grep -q "^q	anchor	/	1	" "$T/export" || fail "slash qualifier"
grep -q "^x@y	anchor" "$T/export" || fail "@ row"
grep -q "^100%	anchor" "$T/export" || fail "% row"
