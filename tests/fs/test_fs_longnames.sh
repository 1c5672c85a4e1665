#!/bin/sh
# test_fs_longnames.sh - nothing stored is invisible to ls: rows and
# qualifiers whose escaped name is longer than a path component (255
# bytes) are listed under their short form, PREFIX%~HASH (tabletfs(5),
# NAMES), and the real tools work through it: ls counts every row that
# tabletctl counts, find sees every version, cp -r copies all, cat and a
# write to latest go through a short name, rm -r of a short-named row
# deletes that row alone, and two keys sharing their first 300 bytes get
# distinct names.
set -eu
. "${top_srcdir:?}/tests/fs/lib.sh"

ctl init
ctl createtable t families=f

# rep N TEXT: TEXT N times.
rep() {
	i=0
	while [ "$i" -lt "$1" ]; do
		printf '%s' "$2"
		i=$((i + 1))
	done
}
a256=$(rep 256 a)			# escaped: 256 bytes
b300=$(rep 300 b)
utf=$(rep 400 é)			# 800 bytes, shown as is: 800
ctlb=$(rep 1666 %01)x			# 1667 bytes, escaped: 4999
qlong=$(rep 300 q)			# a qualifier of 300 bytes

# Twenty short rows and five long ones, two versions each; one more
# column with a long qualifier in r00.
for i in 00 01 02 03 04 05 06 07 08 09 10 11 12 13 14 15 16 17 18 19; do
	ctl set t "r$i" "f:c=v$i@1" "f:c=w$i@2"
done
for k in "$a256" "${b300}1" "${b300}2" "$utf" "$ctlb"; do
	ctl set t "$k" "f:c=old@1" "f:c=val-$(printf '%s' "$k" | cksum |
	    cut -d' ' -f1)@2"
done
ctl set t r00 "f:$qlong=longq@5"
check_eq "count" "$(ctl count t)" 25

fs_mount
ls "$M/t" > "$T/rows"
check_eq "ls lists every row" "$(wc -l < "$T/rows")" 25
while IFS= read -r n; do
	[ "${#n}" -le 255 ] || fail "listed name of ${#n} bytes"
done < "$T/rows"

# The short form: the longest prefix that fits (221 bytes), %~, and the
# first 128 bits of the SHA-256 of the raw key in hex.
h=$(printf '%s' "$a256" | sha256sum | cut -c1-32)
short_a="$(rep 221 a)%~$h"
grep -qx -- "$short_a" "$T/rows" || fail "no $short_a in: $(cat "$T/rows")"
check_eq "cat via short name" "$(cat "$M/t/$short_a/f/c/1")" old
# The two keys that share their first 300 bytes: two names, each its own.
b1=$(grep "^bbb.*%~" "$T/rows" | head -1)
b2=$(grep "^bbb.*%~" "$T/rows" | tail -1)
[ -n "$b1" ] && [ "$b1" != "$b2" ] || fail "b rows: '$b1' '$b2'"
check_eq "b rows" "$(grep -c "^$(rep 221 b)%~" "$T/rows")" 2
want1="val-$(printf '%s' "${b300}1" | cksum | cut -d' ' -f1)"
want2="val-$(printf '%s' "${b300}2" | cksum | cut -d' ' -f1)"
got="$(cat "$M/t/$b1/f/c/latest") $(cat "$M/t/$b2/f/c/latest")"
[ "$got" = "$want1 $want2" ] || [ "$got" = "$want2 $want1" ] ||
    fail "b values: $got"
# UTF-8 is cut between sequences, a control byte's %01 kept whole.
u=$(grep "^é" "$T/rows") || fail "no utf-8 row"
check_eq "utf-8 cut" "${u%%\%~*}" "$(rep 110 é)"
x=$(grep "^%01" "$T/rows") || fail "no %01 row"
check_eq "%XX cut" "${x%%\%~*}" "$(rep 73 %01)"

# The long qualifier is listed and read.
ls "$M/t/r00/f" > "$T/cols"
check_eq "columns" "$(wc -l < "$T/cols")" 2
q=$(grep "%~" "$T/cols") || fail "no short qualifier"
check_eq "short qualifier" "$q" \
    "$(rep 221 q)%~$(printf '%s' "$qlong" | sha256sum | cut -c1-32)"
check_eq "cat long qualifier" "$(cat "$M/t/r00/f/$q/5")" longq

# find sees every version; cp -r copies them all.
check_eq "find" "$(find "$M/t" -mindepth 2 -type f | wc -l)" 51
cp -r "$M/t" "$T/copy"
check_eq "cp -r" "$(find "$T/copy" -mindepth 2 -type f | wc -l)" 51
diff -r -x '.*' "$M/t" "$T/copy" || fail "copy differs"

# A name with the form of no key: ENOENT; creating one: EINVAL.
bad="$(rep 221 a)%~00000000000000000000000000000000"
expect_fail "No such file" ls "$M/t/$bad"
expect_fail "Invalid argument" mkdir "$M/t/$bad"

# A write to latest through a short name is a new version of that row.
echo new > "$M/t/$u/f/c/latest"
check_eq "write via short name" "$(cat "$M/t/$u/f/c/latest")" new
check_eq "versions" "$(ls "$M/t/$u/f/c" | wc -l)" 3

# rm -r of one short-named row deletes that row and no other.
rm -r "$M/t/$b1"
check_eq "ls after rm" "$(ls "$M/t" | wc -l)" 24
[ ! -e "$M/t/$b1" ] || fail "$b1 still there"
check_eq "twin kept" "$(cat "$M/t/$b2/f/c/1")" old
fs_unmount
check_eq "count after rm" "$(ctl count t)" 24
