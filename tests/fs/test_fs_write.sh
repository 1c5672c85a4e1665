#!/bin/sh
# test_fs_write.sh - changing data through the mount: rm of a version and
# of latest, rm -r of a row, rmdir ENOTEMPTY, >> as a read-modify-write
# that refuses a lost update, increment, mv within a row and EXDEV across
# rows, and the errors: EINVAL for bad version names, EFBIG over max_cell,
# ENOENT for a family not in the schema, EPERM for mkdir of a table,
# EROFS for control files; chmod and touch succeed without effect.
set -eu
. "${top_srcdir:?}/tests/fs/lib.sh"

fs_webtable
fs_mount -o max_cell=1k

W=$M/webtable
Q=$W/r1/contents/q
mkdir -p "$Q"
echo one > "$Q/100"
echo two > "$Q/200"
echo three > "$Q/300"

# rm of one version; rm of latest deletes none (latest is a view): it
# hides the name until the next version is written to the column.
rm "$Q/200"
check_eq "after rm 200" "$(ls -U "$Q" | tr '\n' ' ')" "300 100 "
rm "$Q/latest"
check_eq "after rm latest" "$(ls -U "$Q" | tr '\n' ' ')" "300 100 "
expect_fail "No such file" cat "$Q/latest"
expect_fail "No such file" rm "$Q/latest"
expect_fail "No such file" rm "$Q/200"
echo four > "$Q/latest"
check_eq "latest written again" "$(cat "$Q/latest")" "four"
ls "$Q" | grep -qx 300 || fail "a version went when latest was written"
rm "$Q/300"
check_eq "latest now" "$(cat "$Q/latest")" "four"

# rmdir follows POSIX; the column stays (empty) after its last version.
expect_fail "Directory not empty" rmdir "$Q"
rm "$Q/"[0-9]*
[ -d "$Q" ] || fail "column vanished after its last version"
check_eq "empty column" "$(ls "$Q")" ""
rmdir "$Q"
[ ! -e "$Q" ] || fail "rmdir left the column"

# A write past the end leaves a hole that reads as zeros, and
# overwrites in the middle land where they are written.
H=$W/r1/contents/hole
mkdir -p "$H"
printf x | dd of="$H/7" bs=1 seek=10 2>/dev/null
check_eq "hole" "$(od -An -c "$H/7" | tr -s ' ')" \
    " \\0 \\0 \\0 \\0 \\0 \\0 \\0 \\0 \\0 \\0 x"
printf 'abcdef' >"$H/8"
printf 'XY' | dd of="$H/8" bs=1 seek=2 conv=notrunc 2>/dev/null
check_eq "overwrite in the middle" "$(cat "$H/8")" abXYef

# rm -r of a whole row.
mkdir -p "$W/r2/contents/a" "$W/r2/anchor/b"
echo x > "$W/r2/contents/a/latest"
echo y > "$W/r2/anchor/b/latest"
echo z > "$W/r2/anchor/b/5"
rm -r "$W/r2"
[ ! -e "$W/r2" ] || fail "rm -r left the row"
ls "$W" | grep -qx r2 && fail "r2 still listed"

# >> appends on the server as one new version.
mkdir -p "$W/r3/contents/log"
L=$W/r3/contents/log
echo a > "$L/latest"
echo b >> "$L/latest"
check_eq "append" "$(cat "$L/latest")" "a
b"
check_eq "append versions" "$(ls "$L" | wc -l)" 2
# An append cannot conflict: it lands on whatever is newest at its close.
exec 3>>"$L/latest"
echo other > "$L/latest"
echo late >&3
exec 3>&-
check_eq "append after another write" "$(cat "$L/latest")" "other
late"
# A read-modify-write open (no O_APPEND, no O_TRUNC) is refused when
# another version lands between its open and its close.
exec 3<>"$L/latest"
echo other > "$L/latest"
echo late >&3
exec 3>&-
check_eq "conflict refused" "$(cat "$L/latest")" "other"
if command -v python3 >/dev/null 2>&1; then
	# close() itself reports the conflict.
	expect_fail "Stale file handle" python3 -c '
import os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
os.write(fd, b"mine")
with open(sys.argv[1], "w") as f:
	f.write("theirs")
os.close(fd)' "$L/latest"
	check_eq "theirs kept" "$(cat "$L/latest")" "theirs"
fi
# truncate(2) by path commits the shorter value.
mkdir -p "$W/r3/anchor/t"
echo hello > "$W/r3/anchor/t/9"
truncate -s 2 "$W/r3/anchor/t/9"
check_eq "truncate" "$(cat "$W/r3/anchor/t/9")" "he"
# ": > f" publishes the empty value before the shell's close() returns.
: > "$W/r3/anchor/t/9"
check_eq "empty at once" "$(cat "$W/r3/anchor/t/9")" ""
check_eq "empty size" "$(stat -c %s "$W/r3/anchor/t/9")" "0"

# increment: 5 + 5 = 10, stored as a new version.
mkdir -p "$W/r3/contents/n"
echo 5 > "$W/r3/contents/n/increment"
echo 5 > "$W/r3/contents/n/increment"
check_eq "increment" "$(cat "$W/r3/contents/n/latest")" "10"
expect_fail "Invalid argument" sh -c "env printf abc > '$W/r3/contents/n/increment'"
check_eq "bad increment wrote nothing" "$(cat "$W/r3/contents/n/latest")" "10"
expect_fail "ermission\|Bad file" cat "$W/r3/contents/n/increment"

# Other names in a column (neither a timestamp nor a control name) are
# temporary files: held by the daemon, listed while they exist, never
# stored; renamed onto latest, one becomes a version.
versions() {
	ls "$L" | grep -vx 9223372036854775808 | grep '^[1-9][0-9]*$' |
	    sort -n
}
n=$(versions)
for f in foo 007 -1 9223372036854775808; do
	echo "t $f" > "$L/$f"
	check_eq "temporary $f" "$(cat "$L/$f")" "t $f"
	ls "$L" | grep -qx -- "$f" || fail "temporary $f not listed"
done
check_eq "no version made" "$(versions)" "$n"
mv "$L/foo" "$L/latest"
check_eq "renamed onto latest" "$(cat "$L/latest")" "t foo"
check_eq "a new newest version" "$(cat "$L/$(versions | tail -n 1)")" \
    "t foo"
rm "$L/007" "$L/-1" "$L/9223372036854775808"
expect_fail "No such file" cat "$L/foo"
expect_fail "No such file" cat "$L/007"
expect_fail "Invalid argument" sh -c "echo x > '$L/@12x'"
# Temporary files are bounded: max_cell each (1k here), four times that
# in all while they exist; what was renamed into place no longer counts.
i=0
while [ $i -lt 10 ]; do
	head -c 1000 /dev/zero > "$L/t.$i"
	mv "$L/t.$i" "$L/latest"
	i=$((i + 1))
done
check_eq "ten saved through temporary files" "$(stat -c %s "$L/latest")" \
    1000
for i in 1 2 3 4; do
	head -c 1000 /dev/zero > "$L/held.$i"
done
expect_fail "No space left" sh -c "head -c 1000 /dev/zero > '$L/held.5'"
expect_fail "File too large" sh -c "head -c 1025 /dev/zero > '$L/big.tmp'"
rm -f "$L"/held.* "$L/big.tmp"
echo max > "$L/9223372036854775807"
check_eq "largest ts" "$(cat "$L/9223372036854775807")" "max"

# EFBIG at write() beyond max_cell (1k here); exactly 1k is fine.
B=$W/r3/anchor/big
mkdir -p "$B"
head -c 1024 /dev/zero > "$B/7"
check_eq "1k value" "$(stat -c %s "$B/7")" 1024
expect_fail "File too large" sh -c "head -c 1025 /dev/zero > '$B/8'"
# A value is stored whole or not at all: a handle that refused a write
# commits nothing, not the part that fitted nor an empty version.
expect_fail "File too large" sh -c "head -c 1500 /dev/zero |
    dd of='$B/9' bs=512"
expect_fail "No such file" stat "$B/8"
expect_fail "No such file" stat "$B/9"
echo kept > "$B/10"
expect_fail "File too large" sh -c "head -c 1500 /dev/zero |
    dd of='$B/10' bs=512"
check_eq "old value kept" "$(cat "$B/10")" "kept"

# Schema is tabletctl's; families must exist.
expect_fail "No such file" mkdir "$W/r3/nofamily"
expect_fail "Operation not permitted" mkdir "$M/newtable"
expect_fail "File exists" mkdir "$W/r3/contents"

# Control files are read-only.
expect_fail "Read-only" sh -c "echo x > '$M/.status'"
expect_fail "Read-only" sh -c "echo x > '$W/.schema'"
expect_fail "Read-only" sh -c "echo x > '$L/@100'"

# chmod, chown and touch succeed without effect.
chmod 600 "$B/7"
chown 0:0 "$B/7"
touch "$B/7"
check_eq "chmod no effect" "$(stat -c %a "$B/7")" 644
check_eq "touch kept data" "$(stat -c %s "$B/7")" 1024

# mv within a row: one mutation; across rows: EXDEV, so mv copies.
mkdir -p "$W/r4/contents/c" "$W/r4/anchor/d" "$W/r5/contents/c"
echo moved > "$W/r4/contents/c/10"
mv "$W/r4/contents/c/10" "$W/r4/anchor/d/20"
check_eq "mv within row" "$(cat "$W/r4/anchor/d/20")" "moved"
[ ! -e "$W/r4/contents/c/10" ] || fail "mv left the source"
mv "$W/r4/anchor/d/20" "$W/r4/anchor/d/latest"
check_eq "mv to latest" "$(cat "$W/r4/anchor/d/latest")" "moved"
check_eq "mv to latest versions" "$(ls "$W/r4/anchor/d" | wc -l)" 1
echo across > "$W/r4/contents/c/30"
if command -v python3 >/dev/null 2>&1; then
	expect_fail "cross-device" python3 -c "import os,sys; os.rename(sys.argv[1], sys.argv[2])" \
	    "$W/r4/contents/c/30" "$W/r5/contents/c/30"
fi
mv "$W/r4/contents/c/30" "$W/r5/contents/c/30"
check_eq "mv across rows" "$(cat "$W/r5/contents/c/30")" "across"
[ ! -e "$W/r4/contents/c/30" ] || fail "mv across rows left the source"
