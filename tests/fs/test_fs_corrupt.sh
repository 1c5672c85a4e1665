#!/bin/sh
# test_fs_corrupt.sh - flipped bytes in the store, read through the
# mount (docs/design.md section 4: every byte read is checksummed; a mismatch
# is EIO for that read, and tabletctl check reports it; wrong data is
# never returned).
#   - A byte of a value in an SSTable data block: reads of the rows in
#     that block fail with EIO, every other row of the table and of
#     another table reads back exactly, and tabletctl check (over the
#     socket) names the file and the block's offset.
#   - A byte of the footer, of the index block or of the filter block, a
#     file cut short, a missing file: the store mounts; every row of that
#     table in the file fails with EIO, the other table reads back exactly;
#     a write to the damaged table works; check names the file.  The file
#     restored, a remount serves every row, the new one too.
#   - A byte in a commit-log record that is not the last, none synced
#     after it: check names the segment, the record's offset and the
#     intact records after it; the store mounts without ever showing
#     wrong bytes.
#   - The same under -o sync=always, where a later record shows the
#     damaged one synced: check names the segment and the record's
#     offset; the store mounts with every other record's mutation, the
#     daemon says on stderr what it skipped, the segment is kept in lost/,
#     and check names it until it is removed.
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

# 2. The footer, the index block, the filter block; cut short; missing.
# Footer (64 bytes at the end): index offset at 0, filter offset at 16,
# entry count at 32.
u64() {
	od -An -tu8 -j "$2" -N8 "$1" | tr -d ' '
}
for what in footer index filter truncated missing; do
	# t's file, as compactions left it.
	for f in "$S"/sst/*.sst; do
		grep -q 'value-of-row' "$f" && tsst=$f
	done
	cp "$tsst" "$T/pristine/"
	name=sst/$(basename "$tsst")
	size=$(stat -c %s "$tsst")
	case $what in
	footer) flip "$tsst" $((size - 30)) ;;
	index) flip "$tsst" $(($(u64 "$tsst" $((size - 64))) + 2)) ;;
	filter) flip "$tsst" $(($(u64 "$tsst" $((size - 48))) + 2)) ;;
	truncated) truncate -s $((size / 2)) "$tsst" ;;
	missing) rm "$tsst" ;;
	esac
	if ctl check >"$T/check" 2>&1; then
		fail "$what: check passed a damaged SSTable"
	fi
	grep -q "^$name: " "$T/check" ||
	    fail "$what: check does not name $name: $(cat "$T/check")"
	"$TABLETFS" "$S" "$M" 2>"$T/mount.err" ||
	    fail "$what: the store does not mount: $(cat "$T/mount.err")"
	fs_wait_mounted "$M" || fail "$M not mounted"
	check_eq "$what: other table" "$(read_all u)" 0
	grep -q '^damaged_sstables: 1$' "$M/.status" ||
	    fail "$what: .status: $(cat "$M/.status")"
	check_eq "$what: rows of the damaged file failing" "$(read_all t)" 50
	# The mount cannot look the row up (EIO); tabletctl writes it.
	ctl set t row77 "f:q=written-$what@1000" ||
	    fail "$what: a write to the damaged table fails"
	ctl compact --major >/dev/null 2>&1 || :
	fs_unmount
	[ "$what" = missing ] || [ -f "$tsst" ] ||
	    fail "$what: the damaged file was deleted"
	cp "$T/pristine/$(basename "$tsst")" "$tsst"
	fs_mount
	check_eq "$what: restored, rows failing" "$(read_all t)" 0
	check_eq "$what: restored, the row written meanwhile" \
	    "$(cat "$M/t/row77/f/q/1000")" "written-$what"
	fs_unmount
	ctl check >"$T/check" 2>&1 ||
	    fail "$what: restored, check fails: $(cat "$T/check")"
	ctl compact --major
done

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
"$TABLETFS" "$S" "$M" 2>"$T/mount.err" ||
    fail "a torn log keeps the store from mounting: $(cat "$T/mount.err")"
fs_wait_mounted "$M" || fail "$M not mounted"
grep -q "^tabletfs: $lname: damaged record at offset [0-9]* before 2 intact records, none synced after it: dropped as torn by a power loss (the segment is kept in lost/)" \
    "$T/mount.err" || fail "the daemon does not say what it dropped: $(cat "$T/mount.err")"
# A prefix survives: the records before the damage, nothing after it.
for k in 1 2; do
	check_eq "logged $k" "$(cat "$M/u/logged/f/q/$k")" "logged-value-$k"
done
for k in 3 4 5; do
	[ ! -e "$M/u/logged/f/q/$k" ] || fail "logged $k survived the tear"
done
fs_unmount
# It is kept as NNN.torn.log, and check says what recovery dropped.
lost=lost/$(basename "$seg" .log).torn.log
[ -f "$S/$lost" ] || fail "the torn segment is not $lost: $(ls -R "$S")"
if ctl check >"$T/check" 2>&1; then
	fail "check passed with $lost"
fi
grep -q "^$lost: damaged record at offset [0-9]* before 2 intact records, none synced after it: dropped at recovery as torn by a power loss$" \
    "$T/check" || fail "check does not say what recovery dropped: $(cat "$T/check")"
rm "$S/$lost"

# 4. The same with every write synced (-o sync=always): the record after
# the damaged one shows it synced, so it is damage, skipped at recovery.
fs_mount -o sync=always
mkdir -p "$M/u/synced/f/q"
for k in 1 2 3 4 5; do
	echo "synced-value-$k" | cat >"$M/u/synced/f/q/$k"
done
kill -9 "$(fs_daemon_pid)"
fusermount3 -u "$M" 2>/dev/null || umount -l "$M"
fs_wait_daemon
seg=$(ls "$S"/log/*.log | tail -1)
loff=$(grep -abo 'synced-value-3' "$seg" | cut -d: -f1)
[ -n "$loff" ] || fail "record 3 not in $seg"
flip "$seg" $((loff + 5))
lname=log/$(basename "$seg")
if ctl check >"$T/check" 2>&1; then
	fail "check passed a damaged synced log record"
fi
grep -q "^$lname: checksum mismatch in record at offset " "$T/check" ||
    fail "check does not name $lname: $(cat "$T/check")"
"$TABLETFS" "$S" "$M" 2>"$T/mount.err" ||
    fail "a damaged log record keeps the store from mounting: $(cat "$T/mount.err")"
fs_wait_mounted "$M" || fail "$M not mounted"
grep -q "^tabletfs: $lname: [0-9]* damaged bytes at offset [0-9]* skipped at recovery" \
    "$T/mount.err" || fail "the daemon does not say what it skipped: $(cat "$T/mount.err")"
for k in 1 2 4 5; do
	check_eq "synced $k" "$(cat "$M/u/synced/f/q/$k")" "synced-value-$k"
done
[ ! -e "$M/u/synced/f/q/3" ] || fail "the damaged record's write is there"
lost=lost/$(basename "$seg")
[ -f "$S/$lost" ] || fail "$lost missing: $(ls -R "$S")"
if ctl check >"$T/check" 2>&1; then
	fail "check passed with $lost"
fi
grep -q "^$lost: [0-9]* bytes damaged at offset [0-9]*, skipped at recovery" \
    "$T/check" || fail "check does not name $lost: $(cat "$T/check")"
fs_unmount
rm "$S/$lost"
ctl check >"$T/check" 2>&1 || fail "check after removing $lost: $(cat "$T/check")"
