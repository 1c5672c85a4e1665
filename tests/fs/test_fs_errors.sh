#!/bin/sh
# test_fs_errors.sh - the errors of docs/design.md section 2 that
# test_fs_write.sh and test_fs_mount.sh leave out: EINVAL and ERANGE from
# increment when the stored value is not an integer or the sum overflows
# (reported by close(), so written through cat, which checks it); ESTALE
# for a lost read-modify-write without python; EFBIG from truncate;
# EINVAL for mkdir in a column; EPERM for links and special files;
# ENOTEMPTY for a row; EXDEV for a row rename; EROFS for control
# files and every change on a -o ro mount.
set -eu
. "${top_srcdir:?}/tests/fs/lib.sh"

fs_webtable
fs_mount -o max_cell=1k
R=$M/webtable/r
mkdir -p "$R/anchor/n" "$R/anchor/s" "$R/anchor/l"

# Increment: a stored non-integer is EINVAL, overflow is ERANGE; neither
# adds a version.
echo text > "$R/anchor/s/latest"
expect_fail "Invalid argument" sh -c "echo 1 | cat > '$R/anchor/s/increment'"
check_eq "text kept" "$(ls "$R/anchor/s" | wc -l)" 1
echo 9223372036854775806 > "$R/anchor/n/latest"
echo 1 | cat > "$R/anchor/n/increment"
check_eq "at max" "$(cat "$R/anchor/n/latest")" 9223372036854775807
expect_fail "out of range" sh -c "echo 1 | cat > '$R/anchor/n/increment'"
echo -9223372036854775807 > "$R/anchor/n/latest"
echo -1 | cat > "$R/anchor/n/increment"
expect_fail "out of range" sh -c "echo -1 | cat > '$R/anchor/n/increment'"
check_eq "at min" "$(cat "$R/anchor/n/latest")" -9223372036854775808

# ESTALE: cat opens latest for reading and writing (1<>, no O_TRUNC: a
# read-modify-write), another version lands, then cat writes and closes.
L=$R/anchor/l
echo a > "$L/latest"
expect_fail "Stale file handle" sh -c "{ sleep 0.3; echo other > '$L/latest';
    echo late; } | cat 1<> '$L/latest'"
check_eq "other kept" "$(cat "$L/latest")" "other"
# The same when the version that lands repeats the value seen at open: the
# check is on the version, not only its bytes.
expect_fail "Stale file handle" sh -c "{ sleep 0.3; echo other > '$L/latest';
    echo late; } | cat 1<> '$L/latest'"
check_eq "rewrite of the same value kept" "$(cat "$L/latest")" "other"
# >> (O_APPEND) cannot conflict: it appends on the server to whatever is
# newest when it commits.
sh -c "{ sleep 0.3; echo other2 > '$L/latest'; echo late; } |
    cat >> '$L/latest'"
check_eq "appended to what landed" "$(cat "$L/latest")" "other2
late"
echo other > "$L/latest"

# EFBIG: truncate past max_cell, by path and through a handle.
echo v > "$L/5"
expect_fail "File too large" truncate -s 1025 "$L/5"
check_eq "not grown" "$(stat -c %s "$L/5")" 2
truncate -s 1024 "$L/5"
check_eq "grown to max" "$(stat -c %s "$L/5")" 1024

# Links and special files have no place in the data model: EPERM, as
# from a filesystem without them.
expect_fail "Operation not permitted" ln -s "$L/5" "$L/6"
expect_fail "Operation not permitted" ln "$L/5" "$L/7"
expect_fail "Operation not permitted" mkfifo "$L/8"
expect_fail "Operation not permitted" ln -s x "$R/anchor/link"

# A column holds only versions (and temporary files): no subdirectories.
expect_fail "Operation not permitted" mkdir "$L/sub"
expect_fail "Operation not permitted" mkdir "$L/0x10"

# ENOTEMPTY for a row and a family; EXDEV for a row renamed (another
# row), so that mv copies.
expect_fail "Directory not empty" rmdir "$R"
expect_fail "Directory not empty" rmdir "$R/anchor"
if command -v python3 >/dev/null 2>&1; then
	expect_fail "cross-device" python3 -c \
	    "import os,sys; os.rename(sys.argv[1], sys.argv[2])" \
	    "$R" "$R.renamed"
fi

# Control files refuse changes on a rw mount.
for f in "$M/.status" "$M/webtable/.schema" "$M/webtable/.tablets"; do
	expect_fail "Read-only" sh -c ": > '$f'"
	expect_fail "Read-only" sh -c "echo x >> '$f'"
	expect_fail "Read-only" rm "$f"
	expect_fail "Read-only" truncate -s 0 "$f"
done
expect_fail "Read-only" sh -c "echo 1 > '$L/@5'"
fs_unmount

# -o ro: reads work; every kind of change is EROFS.
fs_mount -o ro
check_eq "ro read" "$(cat "$L/latest")" "other"
expect_fail "Read-only" sh -c "echo 1 > '$R/anchor/n/increment'"
expect_fail "Read-only" sh -c "echo x >> '$L/latest'"
expect_fail "Read-only" truncate -s 0 "$L/5"
expect_fail "Read-only" rmdir "$R/anchor/s"
expect_fail "Read-only" rm -r "$R"
expect_fail "Read-only" mv "$L/5" "$L/6"
expect_fail "Read-only" touch "$L/7"
expect_fail "Read-only" ln -s x "$L/9"
expect_fail "Read-only" sh -c ": > '$M/webtable/.tablets'"
check_eq "ro unchanged" "$(cat "$R/anchor/n/latest")" \
    -9223372036854775808
