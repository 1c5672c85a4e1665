#!/bin/sh
# test_fs_large_values.sh - large values through the mount, with the
# tools that move them: dd with 1 MiB blocks, cp, cat, cmp, and mmap.
# A writer's buffer reuses the memory of one closed before it
# (fs->write_bufs), so a smaller value written after a larger one holds
# its own bytes alone, and a hole in it reads as zeros.  Readers of a
# version keep its pages in the kernel's cache from one open to the next;
# a version rewritten at the same time (through another open, or by a
# second close of one open of latest) reads back new, and latest names
# the new version after a write although a reader had read the old one.
# A value of max_cell (64 MiB) is stored whole; one byte more is EFBIG
# from write(), which dd reports.
set -eu
. "${top_srcdir:?}/tests/fs/lib.sh"

fs_webtable
fs_mount
C=$M/webtable/com.cnn.www/contents/%
mkdir -p "$C"
head -c 3145728 /dev/urandom >"$T/big"
head -c 1048576 /dev/urandom >"$T/mid"

dd if="$T/big" of="$C/1000" bs=1M status=none
cmp "$T/big" "$C/1000" || fail "dd bs=1M: the 3 MiB version differs"
dd if="$C/1000" of="$T/back" bs=1M status=none
cmp "$T/big" "$T/back" || fail "dd bs=1M: reading it back differs"

# After the 3 MiB writer closed, a 1 MiB one with a hole: its bytes, and
# zeros where nothing was written, never the bytes of the one before.
dd if="$T/mid" of="$C/2000" bs=1M seek=1 status=none
{ head -c 1048576 /dev/zero; cat "$T/mid"; } >"$T/holed"
cmp "$T/holed" "$C/2000" || fail "a hole reads as zeros"
cp "$T/mid" "$C/3000"
cmp "$T/mid" "$C/3000" || fail "cp: a smaller value after a larger one"
check_eq "its size" "$(stat -c %s "$C/3000")" 1048576

# Read once (the kernel keeps the pages), then rewritten at the same
# time through another open: the next reader sees the new value.
cmp "$T/big" "$C/1000" || fail "the version, read to the cache"
cp "$T/mid" "$C/1000"
cmp "$T/mid" "$C/1000" || fail "a version rewritten at its time reads new"
check_eq "and its size" "$(stat -c %s "$C/1000")" 1048576

# mmap reads the same bytes.
python3 - "$C/1000" "$T/mid" <<'PY' || fail "mmap of a version"
import mmap, sys
with open(sys.argv[1], "rb") as f, open(sys.argv[2], "rb") as g:
    m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    assert m[:] == g.read(), "mmap differs"
    m.close()
PY

# latest, read while it names 3000, then a new version: latest reads new.
cmp "$T/mid" "$C/latest" || fail "latest before the write"
cp "$T/big" "$C/latest"
cmp "$T/big" "$C/latest" || fail "latest after a new version"

# One open of latest, closed twice (a shared descriptor): the second
# close puts the longer value at the version the first close made, which
# a reader has read meanwhile.
exec 3>"$C/latest"
(cat "$T/mid" >&3)
ts=$(ls -U "$C" | head -n 1)
cmp "$T/mid" "$C/$ts" || fail "the version of the first close"
(cat "$T/big" >&3)
exec 3>&-
{ cat "$T/mid" "$T/big"; } >"$T/both"
check_eq "one open, one version" "$(ls -U "$C" | head -n 1)" "$ts"
cmp "$T/both" "$C/$ts" || fail "the version read again after the second close"
check_eq "its size after the second close" "$(stat -c %s "$C/$ts")" \
    "$(stat -c %s "$T/both")"

# The same with a value of the same size: the second commit (an fsync)
# rewrites the version in place, so only the mount's invalidation of the
# version's pages keeps a reader from its old bytes.
# (A column of its own: contents keeps 3 versions.)
mkdir "$M/webtable/com.cnn.www/contents/rewrite"
python3 - "$M/webtable/com.cnn.www/contents/rewrite" <<'PY' || fail "a version rewritten by a later commit of one open"
import os, sys
col = sys.argv[1]
a, b = os.urandom(262144), os.urandom(262144)
fd = os.open(os.path.join(col, "latest"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
os.write(fd, a)
os.fsync(fd)
ts = sorted((n for n in os.listdir(col) if n.isdigit()), key=int)[-1]
with open(os.path.join(col, ts), "rb") as f:
    assert f.read() == a, "the first commit's value"
os.lseek(fd, 0, os.SEEK_SET)
os.write(fd, b)
os.fsync(fd)
with open(os.path.join(col, ts), "rb") as f:
    assert f.read() == b, "the version still reads its first value"
os.close(fd)
with open(os.path.join(col, ts), "rb") as f:
    assert f.read() == b, "after the close"
PY

# max_cell, 64 MiB: stored whole; one byte more fails the write.
head -c 67108864 /dev/urandom >"$T/max"
dd if="$T/max" of="$C/4000" bs=1M status=none ||
    fail "a value of max_cell"
cmp "$T/max" "$C/4000" || fail "the value of max_cell reads back"
head -c 1 /dev/zero >>"$T/max"
expect_fail "File too large" dd if="$T/max" of="$C/5000" bs=1M status=none
[ ! -e "$C/5000" ] || fail "a value over max_cell was stored"
rm -f "$T/max"
fs_unmount
ctl check >/dev/null || fail "tabletctl check"
