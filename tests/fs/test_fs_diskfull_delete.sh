#!/bin/sh
# test_fs_diskfull_delete.sh - a full disk is fixed by deleting data
# (issue 24, item 5), with the real tools, on a 20 MB tmpfs and the
# default memtable (64 MiB), so that everything written stays in the
# memtable and in one log segment:
#   - shell writes fill the disk until one fails with ENOSPC; then
#     .status and tabletctl status say the disk is full, and a write that
#     adds data fails with ENOSPC while deletes are accepted;
#   - rm -r of every row through the mount (and tabletctl deleterow),
#     then tabletctl compact --major: writes succeed again without a
#     remount, the log segment is gone, and both say the disk is ok;
#   - filled again and unmounted full, the store mounts read-write on
#     the full disk with every acknowledged value readable, still full;
#     rm -r and a compaction bring writes back, a kept row is intact,
#     and tabletctl check is clean.
# Before the fix the compaction failed with ENOSPC, and so did every
# large write after it, with or without a remount: the 20 MB segment
# was never released.  Needs root to mount the tmpfs (else 77).
set -eu
. "${top_srcdir:?}/tests/fs/lib.sh"

fs_small_store 20m

ctl init
ctl createtable t families=f
# Incompressible 64 KiB values.
head -c 49152 /dev/urandom | base64 -w 0 >"$T/value"
fs_mount
echo kept >"$T/kept"
mkdir -p "$M/t/keep/f/q"
cat "$T/kept" >"$M/t/keep/f/q/latest"

# disk_state WHAT WANT: .status and tabletctl status both say WANT
# (full or ok) on their disk line.
disk_state() {
	check_eq "$1: .status" "$(sed -n 's/^disk: //p' "$M/.status")" "$2"
	check_eq "$1: tabletctl status" \
	    "$(ctl status | sed -n 's/^disk  *//p')" "$2"
}

# fill PREFIX: write 64 KiB values into rows PREFIX1, PREFIX2, ... until
# one fails; the failure must be ENOSPC.  Acknowledged rows go to acked.
fill() {
	k=0
	while :; do
		k=$((k + 1))
		[ $k -le 1000 ] || fail "the tmpfs never filled"
		mkdir -p "$M/t/$1$k/f/q" 2>"$T/err" ||
		    fail "mkdir on a full disk: $(cat "$T/err")"
		if cat "$T/value" 2>"$T/err" >"$M/t/$1$k/f/q/latest"; then
			echo "$1$k" >>"$T/acked"
			continue
		fi
		grep -q "No space left on device" "$T/err" ||
		    fail "a write on a full disk failed with: $(cat "$T/err")"
		rmdir "$M/t/$1$k/f/q" "$M/t/$1$k/f" "$M/t/$1$k" 2>/dev/null ||
		    :
		break
	done
	[ $k -ge 10 ] || fail "only $k values before the disk filled"
}

# Every acknowledged value reads back exactly.
verify_acked() {
	while read -r r; do
		cmp -s "$T/value" "$M/t/$r/f/q/latest" ||
		    fail "$1: acknowledged value $r lost or wrong"
	done <"$T/acked"
	cmp -s "$T/kept" "$M/t/keep/f/q/latest" || fail "$1: keep lost"
}

# free_rows WHAT: delete every acknowledged row, one with tabletctl
# deleterow and the others with rm -r through the mount, then compact;
# a 64 KiB write must then succeed, with no remount.
free_rows() {
	first=$(head -n 1 "$T/acked")
	ctl deleterow t "$first" || fail "$1: deleterow on a full disk"
	while read -r r; do
		[ "$r" = "$first" ] || rm -r "$M/t/$r" ||
		    fail "$1: rm -r $r on a full disk"
	done <"$T/acked"
	: >"$T/acked"
	ctl compact --major 2>"$T/err" ||
	    fail "$1: compact --major after the deletes: $(cat "$T/err")"
	mkdir -p "$M/t/after$1/f/q"
	cat "$T/value" >"$M/t/after$1/f/q/latest" 2>"$T/err" ||
	    fail "$1: a write after deletes and a compaction: $(cat "$T/err")"
	echo "after$1" >>"$T/acked"
	disk_state "$1: freed" ok
	# The log that held the deleted rows is gone: a few KiB are left.
	log=$(du -sk "$S/log" | cut -f 1)
	[ "$log" -lt 1024 ] || fail "$1: the log still takes $log KiB"
}

disk_state "fresh" ok
reserve=$(ctl status | sed -n 's/^reserve_bytes  *//p')
[ "$reserve" -gt 0 ] || fail "no reserve on a fresh store: $reserve"
[ -f "$S/reserve" ] || fail "no $S/reserve"

: >"$T/acked"
fill a
echo "# disk full after $(wc -l <"$T/acked") values"
disk_state "full" full
# Full: a small write fails too, with ENOSPC, until room is freed (cat
# reports what close() returns; a shell's own redirection would not).
echo small >"$T/smallvalue"
expect_fail "No space left on device" \
    sh -c "cat '$T/smallvalue' >'$M/t/keep/f/q/latest'"
expect_fail "No space left on device" ctl set t keep f:q=small
verify_acked "full"
free_rows "mounted"
[ -f "$S/reserve" ] || fail "the reserve was not taken back"

# Full again, unmounted so, remounted on the full disk.
fill b
echo "# disk full again after $(wc -l <"$T/acked") values"
fs_unmount
# How much the unmount's flush frees varies (once it left room for the
# reserve), so a file beside the store takes all but 64 KiB of what is
# free: the remount meets a full disk.
free=$(($(stat -f -c '%a * %S' "$T/small") / 65536 - 1))
[ $free -le 0 ] ||
    dd if=/dev/zero of="$T/small/filler" bs=64k count=$free 2>/dev/null
fs_mount
disk_state "remounted full" full
verify_acked "remounted full"
expect_fail "No space left on device" \
    sh -c "cat '$T/value' >'$M/t/keep/f/q/latest'"
rm -f "$T/small/filler"
free_rows "remounted"
verify_acked "recovered"

# And once more across a remount with room: nothing lost, check clean.
fs_unmount
fs_mount
disk_state "remounted" ok
verify_acked "remounted"
fs_unmount
ctl check >"$T/check" 2>&1 || { cat "$T/check" >&2; fail "check not clean"; }
