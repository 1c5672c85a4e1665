#!/bin/sh
# test_fs_rename.sh - rename(2) of a column or family directory within a
# row is one atomic row mutation: every version moves with its timestamp
# and value, through mv and through os.rename (which has no copy to fall
# back on).  The kernel's cached names inside the moved directory keep
# working, and a descriptor opened before a rename (of the directory, or
# of the version file) commits where the file is now; the family a column
# left stays until rmdir; a pending (empty) directory moves too.  POSIX's refusals: a destination that is not empty
# is ENOTEMPTY, RENAME_NOREPLACE onto one that exists EEXIST, a family
# not in the schema ENOENT; another row stays EXDEV, so mv copies.
set -eu
. "${top_srcdir:?}/tests/fs/lib.sh"

fs_webtable
fs_mount

W=$M/webtable
R=$W/com.cnn.www
rename() {
	python3 -c "import os,sys; os.rename(sys.argv[1], sys.argv[2])" "$@"
}
command -v python3 >/dev/null 2>&1 || skip "python3 is needed for rename(2)"

mkdir -p "$R/anchor/cnnsi.com" "$R/anchor/my.look.ca" "$R/contents/%"
echo CNN > "$R/anchor/cnnsi.com/1000000000000009"
echo "CNN old" > "$R/anchor/cnnsi.com/1000000000000002"
echo CNN.com > "$R/anchor/my.look.ca/1000000000000008"
echo "<html>" > "$R/contents/%/1000000000000006"

# A column renamed within its family, by rename(2) itself.
A=$R/anchor/cnnsi.com
cat "$A/latest" >/dev/null	# the kernel now knows names inside it
rename "$A" "$R/anchor/sports.cnn.com"
check_eq "anchors after rename" "$(ls "$R/anchor" | tr '\n' ' ')" \
    "my.look.ca sports.cnn.com "
check_eq "versions moved with their times" \
    "$(ls -U "$R/anchor/sports.cnn.com" | tr '\n' ' ')" \
    "1000000000000009 1000000000000002 "
check_eq "values moved" "$(cat "$R/anchor/sports.cnn.com/1000000000000002")" \
    "CNN old"
check_eq "latest there" "$(cat "$R/anchor/sports.cnn.com/latest")" "CNN"
check_eq "mtime is the timestamp" \
    "$(stat -c %Y "$R/anchor/sports.cnn.com/1000000000000009")" 1000000000
[ ! -e "$A" ] || fail "the old column is still there"
check_eq "the engine agrees" "$(ctl lookup webtable com.cnn.www \
    columns=anchor:sports.cnn.com | grep -c '^  anchor:sports.cnn.com @')" 2
expect_fail "not found" ctl lookup webtable com.cnn.www \
    columns=anchor:cnnsi.com

# A shell in the renamed directory keeps working there.
(
	cd "$R/anchor/my.look.ca"
	cat latest >/dev/null
	rename "$R/anchor/my.look.ca" "$R/anchor/look.ca"
	check_eq "cwd after rename" "$(cat latest)" "CNN.com"
	echo "CNN again" > 1000000000000010
)
check_eq "a write in the renamed cwd lands at the new name" \
    "$(cat "$R/anchor/look.ca/latest")" "CNN again"
[ ! -e "$R/anchor/my.look.ca" ] || fail "the write recreated the old name"

# A descriptor opened before the rename writes where the file is now.
exec 3>"$R/anchor/look.ca/1000000000000011"
rename "$R/anchor/look.ca" "$R/anchor/look2.ca"
echo "written after" >&3
exec 3>&-
check_eq "an open file follows its directory" \
    "$(cat "$R/anchor/look2.ca/1000000000000011")" "written after"
[ ! -e "$R/anchor/look.ca" ] || fail "the open file recreated the old name"
rename "$R/anchor/look2.ca" "$R/anchor/look.ca"
rm "$R/anchor/look.ca/1000000000000011"

# So does one whose version file was renamed (a rename of a file, for
# comparison): the open descriptor commits at the new timestamp.
echo v1 > "$R/anchor/look.ca/1000000000000012"
exec 3>>"$R/anchor/look.ca/1000000000000012"
mv "$R/anchor/look.ca/1000000000000012" "$R/anchor/look.ca/1000000000000013"
echo v2 >&3
exec 3>&-
check_eq "an open version follows its rename" \
    "$(cat "$R/anchor/look.ca/1000000000000013")" "v1
v2"
[ ! -e "$R/anchor/look.ca/1000000000000012" ] ||
    fail "the open version recreated the old timestamp"
rm "$R/anchor/look.ca/1000000000000013"

# A column moved to another family: the family left behind stays until
# rmdir, as after rm of its last version.
mv "$R/anchor/look.ca" "$R/contents/look.ca"
check_eq "moved across families" "$(ls "$R/contents" | tr '\n' ' ')" \
    "% look.ca "
check_eq "contents keeps maxversions=3" \
    "$(ls "$R/contents/look.ca" | wc -l)" 2
check_eq "anchor still has its other column" "$(ls "$R/anchor")" \
    "sports.cnn.com"
mv "$R/anchor/sports.cnn.com" "$R/contents/"
[ -d "$R/anchor" ] || fail "the family left behind vanished"
check_eq "empty family" "$(ls "$R/anchor")" ""

# A whole family: its columns keep their qualifiers.
rename "$R/contents" "$R/anchor"
check_eq "family renamed" "$(ls "$R" | tr '\n' ' ')" "anchor "
check_eq "columns kept" "$(ls "$R/anchor" | tr '\n' ' ')" \
    "% look.ca sports.cnn.com "
check_eq "values kept" "$(cat "$R/anchor/%/latest")" "<html>"

# Refusals, each changing nothing.
mkdir -p "$R/contents/x"
echo x > "$R/contents/x/5"
expect_fail "Directory not empty" rename "$R/contents/x" "$R/anchor/look.ca"
expect_fail "Directory not empty" rename "$R/contents" "$R/anchor"
expect_fail "No such file" rename "$R/contents/x" "$R/nosuch/x"
expect_fail "No such file" rename "$R/contents/nosuch" "$R/contents/y"
mkdir -p "$W/other.row/contents"
expect_fail "cross-device" rename "$R/contents/x" "$W/other.row/contents/x"
expect_fail "cross-device" rename "$R" "$W/other.row"
mkdir -p "$R/contents/y"
echo y > "$R/contents/y/6"
rc=0
python3 - "$R/contents/x" "$R/contents/y" <<'EOF' || rc=$?
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD, RENAME_NOREPLACE = -100, 1
rc = libc.renameat2(AT_FDCWD, sys.argv[1].encode(), AT_FDCWD,
    sys.argv[2].encode(), RENAME_NOREPLACE)
sys.exit(0 if rc == 0 else ctypes.get_errno())
EOF
check_eq "RENAME_NOREPLACE onto a column: EEXIST" $rc 17
check_eq "refusals changed nothing" "$(cat "$R/contents/x/latest")" "x"
check_eq "anchor intact" "$(ls "$R/anchor" | tr '\n' ' ')" \
    "% look.ca sports.cnn.com "

# A pending directory (mkdir, nothing written) moves in memory.
mkdir -p "$R/anchor/empty"
rename "$R/anchor/empty" "$R/anchor/still.empty"
check_eq "pending moved" "$(ls "$R/anchor" | tr '\n' ' ')" \
    "% look.ca sports.cnn.com still.empty "
echo first > "$R/anchor/still.empty/latest"
check_eq "written after its move" "$(cat "$R/anchor/still.empty/latest")" \
    "first"

# Across rows mv copies (EXDEV), and every version keeps its time.
mkdir -p "$W/other.row/anchor"
mv "$R/anchor/look.ca" "$W/other.row/anchor/"
check_eq "copied across rows" "$(ls -U "$W/other.row/anchor/look.ca" |
    tr '\n' ' ')" "1000000000000010 1000000000000008 "

# A renamed file's old name stays free after the daemon's node tables
# grow (past 1024 names): a new file there is a new file, not the renamed
# one under a second name.
V=$W/grow/anchor/v
mkdir -p "$V"
echo one > "$V/100"
mv "$V/100" "$V/200"
exec 4<"$V/200"		# the kernel keeps the renamed inode
i=1000
while [ $i -lt 2200 ]; do
	: > "$V/$i"
	i=$((i + 1))
done
echo two > "$V/100"
exec 4<&-
check_eq "the old name holds the new file" "$(cat "$V/100")" "two"
check_eq "the renamed file is unchanged" "$(cat "$V/200")" "one"

# Everything survives a remount.
fs_unmount
fs_mount
check_eq "after remount" "$(ls "$R/anchor" | tr '\n' ' ')" \
    "% sports.cnn.com still.empty "
check_eq "versions after remount" \
    "$(ls -U "$R/anchor/sports.cnn.com" | tr '\n' ' ')" \
    "1000000000000009 1000000000000002 "

# A move carries no more than one write may (max_cell): past that,
# rename(2) is EXDEV and mv copies version by version.  On a cell the
# limit of a move is the tablet servers' own, not the mount's option.
[ -z "$CELL" ] || exit 0
fs_unmount
fs_mount -o max_cell=1k
mkdir -p "$R/anchor/wide"
head -c 600 /dev/zero | tr '\0' a > "$R/anchor/wide/1"
head -c 600 /dev/zero | tr '\0' b > "$R/anchor/wide/2"
expect_fail "cross-device" rename "$R/anchor/wide" "$R/anchor/wider"
mv "$R/anchor/wide" "$R/anchor/wider"
check_eq "mv copied it" "$(ls -U "$R/anchor/wider" | tr '\n' ' ')" "2 1 "
check_eq "with its values" "$(cat "$R/anchor/wider/1" | wc -c)" 600
[ ! -e "$R/anchor/wide" ] || fail "mv left the source"
