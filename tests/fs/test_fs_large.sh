#!/bin/sh
# test_fs_large.sh - versions larger than a data block, once they are in
# SSTables: stat and ls -l of them, and ls of their table, learn keys and
# sizes from the tables' indexes and read no block (the block cache
# counts no miss, where each used to read its whole block), while cat
# reads each whole and right, reading its own block alone.  A damaged
# block fails the reads that need it (EIO), and only those.  A large value
# written after a small one, which sorts before it in the same SSTable,
# gets a block of its own all the same.
set -eu
. "${top_srcdir:?}/tests/fs/lib.sh"

fs_webtable
fs_mount
C=$M/webtable/com.cnn.www/contents/%
mkdir -p "$C"
head -c 1048576 /dev/urandom >"$T/v1"
head -c 3000000 /dev/urandom >"$T/v2"
cp "$T/v1" "$C/1000000000000001"
cp "$T/v2" "$C/1000000000000002"
A=$M/webtable/com.cnn.www/anchor/cnnsi.com
mkdir -p "$A"
echo small >"$A/latest"	# sorts before them, in the same SSTable
fs_unmount
ctl compact webtable --major >/dev/null
fs_mount

misses() {
	sed -n 's/^cache_misses: //p' "$M/.status"
}
m0=$(misses)
check_eq "sizes" "$(stat -c %s "$C/1000000000000001" \
    "$C/1000000000000002" "$C/latest" | tr '\n' ' ')" \
    "1048576 3000000 3000000 "
check_eq "listing" "$(ls -l "$C" | awk 'NR > 1 { print $5, $9 }' |
    tr '\n' ' ')" "1048576 1000000000000001 3000000 1000000000000002 "
check_eq "stat and ls -l read no block" "$(misses)" "$m0"
check_eq "the table's rows" "$(ls "$M/webtable")" "com.cnn.www"
check_eq "listing the table reads no block" "$(misses)" "$m0"
# A version's value reads its own block alone: not the blocks of the
# column in front of it, nor of the newer version it is walked past, nor
# of the older one after the newest.
cmp "$T/v1" "$C/1000000000000001" || fail "the 1 MiB version differs"
check_eq "cat of the older version reads one block" \
    "$(($(misses) - m0))" 1
m1=$(misses)
cmp "$T/v2" "$C/latest" || fail "the 3 MB version differs"
check_eq "cat of the newest reads one block" "$(($(misses) - m1))" 1
check_eq "a small value beside them" "$(cat "$A/latest")" "small"
fs_unmount
ctl check >/dev/null || fail "tabletctl check"
# What follows damages the store's files, which a cell's client has not.
[ -z "$CELL" ] || exit 0

# A flipped byte inside the newest version's block (the file holds the
# small anchor's block, then that one's, 3 MB, then the older one's):
# its size still comes from the checked index, reading it is EIO, and the
# older version, whose read does not need that block, reads back exactly.
set -- "$S"/sst/*.sst
[ $# -eq 1 ] || fail "one SSTable expected after the major compaction"
b=$(od -An -tu1 -j 1000000 -N1 "$1" | tr -d ' ')
printf "$(printf '\\%03o' $((b ^ 1)))" |
    dd of="$1" bs=1 seek=1000000 conv=notrunc 2>/dev/null
fs_mount
check_eq "the damaged version's size" \
    "$(stat -c %s "$C/1000000000000002")" 3000000
if cat "$C/1000000000000002" >/dev/null 2>"$T/err"; then
	fail "a damaged value was read"
fi
grep -q "Input/output error" "$T/err" || fail "not EIO: $(cat "$T/err")"
cmp "$T/v1" "$C/1000000000000001" ||
    fail "the older version, beside the damaged block, differs"
fs_unmount
if ctl check >"$T/check" 2>&1; then
	fail "check missed the damaged block"
fi
grep -q "checksum mismatch" "$T/check" || fail "check: $(cat "$T/check")"
