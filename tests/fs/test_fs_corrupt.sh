#!/bin/sh
# test_fs_corrupt.sh - flipped bytes in the store, read through the
# mount (DESIGN.md section 4: every byte read is checksummed; a mismatch
# is EIO for that read, and tabletctl check reports it; wrong data is
# never returned).
#   - A byte of a value in an SSTable data block: reads of the rows in
#     that block fail with EIO, every other row of the table and of
#     another table reads back exactly, and tabletctl check (over the
#     socket) names the file and the block's offset.
#   - A byte of the footer: the store refuses to mount, naming the file,
#     or mounts with the other table readable; check names the file.
#   - A byte in a commit-log record that is not the last, none synced
#     after it: check names the segment, the record's offset and the
#     intact records after it; the store mounts without ever showing
#     wrong bytes.
set -eu
. "${top_srcdir:?}/tests/fs/lib.sh"

ctl init
ctl createtable t families=f
ctl createtable u families=f
# Small raw blocks: a value's bytes can be found in the file, and a table
# has many blocks.
ctl setgroup t default blocksize=1k compression=none
pad=$(printf '%0200d' 0)
i=10
while [ $i -lt 60 ]; do
	printf 'row%d\tf\tq\t1000\tvalue-of-row%d-%s\n' $i $i "$pad" >>"$T/t.in"
	printf 'row%d\tf\tq\t1000\tother-%d\n' $i $i >>"$T/u.in"
	i=$((i + 1))
done
ctl import t "$T/t.in"
ctl import u "$T/u.in"
ctl compact --major
ls "$S/sst" >"$T/ssts"
[ "$(wc -l <"$T/ssts")" -eq 2 ] || fail "want 2 SSTables: $(cat "$T/ssts")"
cp -r "$S/sst" "$T/pristine"
for f in "$S"/sst/*.sst; do
	grep -q 'value-of-row' "$f" && tsst=$f
done
usst=$(ls "$S"/sst/*.sst | grep -v "$tsst")

# flip FILE OFFSET: XOR the byte at OFFSET with 0x01.
flip() {
	b=$(od -An -tu1 -j "$2" -N1 "$1" | tr -d ' ')
	printf "$(printf '\\%03o' $((b ^ 1)))" |
	    dd of="$1" bs=1 seek="$2" conv=notrunc 2>/dev/null
}

# read_all TABLE WANT-PREFIX: each row reads exactly or fails with EIO;
# prints the number of EIO failures.
read_all() {
	eio=0 i=10
	while [ $i -lt 60 ]; do
		if got=$(cat "$M/$1/row$i/f/q/1000" 2>"$T/err"); then
			case $1 in
			t) want="value-of-row$i-$pad" ;;
			*) want="other-$i" ;;
			esac
			[ "$got" = "$want" ] || fail "$1/row$i reads wrong bytes"
		else
			grep -q "Input/output error" "$T/err" ||
			    fail "$1/row$i: $(cat "$T/err")"
			eio=$((eio + 1))
		fi
		i=$((i + 1))
	done
	echo $eio
}

# 1. A data block.
off=$(grep -abo 'value-of-row33-' "$tsst" | head -1 | cut -d: -f1)
flip "$tsst" $((off + 20))
fs_mount
expect_fail "Input/output error" cat "$M/t/row33/f/q/1000"
eio=$(read_all t)
[ "$eio" -ge 1 ] && [ "$eio" -le 10 ] ||
    fail "$eio rows of t fail, want the few in the damaged block"
check_eq "other table" "$(read_all u)" 0
cat "$M/.status" >/dev/null
if ctl check >"$T/check" 2>&1; then
	fail "check passed a damaged SSTable"
fi
name=sst/$(basename "$tsst")
grep -q "^$name: data block checksum mismatch at offset " "$T/check" ||
    fail "check does not name $name: $(cat "$T/check")"
boff=$(sed -n "s|^$name: data block checksum mismatch at offset ||p" \
    "$T/check")
[ "$boff" -le $((off + 20)) ] && [ $((off + 20 - boff)) -lt 2048 ] ||
    fail "check names block $boff for a byte at $((off + 20))"
grep -q "1 problem" "$T/check" || fail "check: $(cat "$T/check")"
fs_unmount
cp "$T/pristine"/*.sst "$S/sst/"

# 2. The footer.
size=$(stat -c %s "$tsst")
flip "$tsst" $((size - 30))
if ctl check >"$T/check" 2>&1; then
	fail "check passed a damaged footer"
fi
grep -q "^$name: footer checksum mismatch" "$T/check" ||
    fail "check does not name $name: $(cat "$T/check")"
if "$TABLETFS" "$S" "$M" 2>"$T/mount.err"; then
	fs_wait_mounted "$M" || fail "$M not mounted"
	check_eq "other table, footer damaged" "$(read_all u)" 0
	expect_fail "Input/output error" cat "$M/t/row33/f/q/1000"
	fs_unmount
else
	grep -q "$name: footer checksum mismatch" "$T/mount.err" ||
	    fail "mount: $(cat "$T/mount.err")"
fi
cp "$T/pristine"/*.sst "$S/sst/"

# 3. A commit-log record (the third of five, so not a torn tail).
fs_mount
mkdir -p "$M/u/logged/f/q"
for k in 1 2 3 4 5; do
	echo "logged-value-$k" | cat >"$M/u/logged/f/q/$k"
done
kill -9 "$(fs_daemon_pid)"
fusermount3 -u "$M" 2>/dev/null || umount -l "$M"
fs_wait_daemon
seg=$(ls "$S"/log/*.log | tail -1)
loff=$(grep -abo 'logged-value-3' "$seg" | cut -d: -f1)
[ -n "$loff" ] || fail "record 3 not in $seg"
flip "$seg" $((loff + 5))
if ctl check >"$T/check" 2>&1; then
	fail "check passed a damaged log record"
fi
lname=log/$(basename "$seg")
# Nothing was synced after it (src/log/format.h): the segment is torn
# there, as a power loss leaves it, and check says what replay drops.
grep -q "^$lname: damaged record at offset [0-9]* before 2 intact records" \
    "$T/check" || fail "check does not name $lname: $(cat "$T/check")"
if "$TABLETFS" "$S" "$M" 2>"$T/mount.err"; then
	fs_wait_mounted "$M" || fail "$M not mounted"
	for k in 1 2 3 4 5; do
		if got=$(cat "$M/u/logged/f/q/$k" 2>/dev/null); then
			check_eq "logged $k" "$got" "logged-value-$k"
		fi
	done
	fs_unmount
else
	grep -q "$lname: checksum mismatch in record at offset" \
	    "$T/mount.err" || fail "mount: $(cat "$T/mount.err")"
fi
