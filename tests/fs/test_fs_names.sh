#!/bin/sh
# test_fs_names.sh - row keys and qualifiers with odd bytes round-trip
# between the escaped path names and the stored bytes: a space, '%', '/'
# (written %2F), '@', UTF-8, a control byte 0x01 (%01), a leading dot, the
# empty qualifier (%), and lower-case hex accepted on lookup; names over
# 255 bytes are refused (ENAMETOOLONG).  tabletctl reads and prints the
# same spelling: every name copied from ls works in its commands (set,
# lookup, read start/end/prefix, columns=, increment, checkandset,
# deletecolumn, deleterow) and comes back as ls shows it.
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

# The bytes stored are the decoded ones: export spells them as the mount
# does, so "a%2Fb" there is the row a/b, not the five bytes a%2Fb.
fs_unmount
ctl export webtable > "$T/export"
grep -q "^a%2Fb	anchor	%	1	" "$T/export" || fail "a/b: $(cat "$T/export")"
grep -q "^a b	anchor" "$T/export" || fail "space row"
grep -q '^ctl%01x	anchor' "$T/export" || fail "0x01 row: $(cat "$T/export")"
grep -q '^héllo	anchor' "$T/export" || fail "utf-8 row"
grep -q "^%2Edot	anchor" "$T/export" || fail "dot row"
grep -q "^q	anchor	%2F	1	" "$T/export" || fail "slash qualifier"
grep -q "^x%40y	anchor" "$T/export" || fail "@ row"
grep -q "^100%25	anchor" "$T/export" || fail "% row"

# One spelling: every row and qualifier name copied from ls pastes into
# tabletctl (over the mount's control socket) and comes back the same.
fs_mount
ls "$W" > "$T/rows"
while IFS= read -r r; do
	ctl lookup webtable "$r" columns=anchor > "$T/out" ||
	    fail "lookup '$r'"
	check_eq "lookup '$r'" "$(sed -n 2p "$T/out")" "$r"
	ctl set webtable "$r" "anchor:%=viactl@7"
	check_eq "set '$r'" "$(cat "$W/$r/anchor/%/7")" viactl
	check_eq "read prefix '$r'" "$(ctl read webtable "prefix=$r" \
	    columns=anchor: | sed -n 2p)" "$r"
	check_eq "increment '$r'" "$(ctl increment webtable "$r" \
	    "anchor:n" 3)" 3
	check_eq "checkandset '$r'" "$(ctl checkandset webtable "$r" \
	    anchor:% viactl "anchor:%=cas@8")" applied
	check_eq "cas via mount '$r'" "$(cat "$W/$r/anchor/%/latest")" cas
	ctl deletecolumn webtable "$r" anchor n
	expect_fail "not found" ctl lookup webtable "$r" columns=anchor:n
done < "$T/rows"
check_eq "start/end" "$(ctl read webtable start=%2Edot end=a%20b |
    grep -v '^ ' | grep -v -e '----')" "%2Edot
100%25"
ls "$W/q/anchor" > "$T/cols"
while IFS= read -r q; do
	ctl lookup webtable q "columns=anchor:$q" > "$T/out"
	grep -qF "  anchor:$q @ " "$T/out" ||
	    fail "column '$q': $(cat "$T/out")"
done < "$T/cols"
# The empty qualifier, as ls shows it, and a deleterow by a copied name.
check_eq "empty qualifier" "$(ctl lookup webtable "a b" columns=anchor:% |
    sed -n 3p)" "  anchor:% @ 8"
ctl deleterow webtable "ctl%01x"
expect_fail "row ctl%01x not found" ctl lookup webtable "ctl%01x"
# A name the mount would refuse is refused: usage error, nothing written.
expect_fail "bad row" ctl set webtable "a/b" "anchor:%=x"
expect_fail "bad column" ctl increment webtable q "anchor:bad%zz" 1
fs_unmount
