#!/bin/sh
# test_fs_diskfull.sh - a store on a small tmpfs that fills up, with a
# memtable small enough that flushes run (and fail) while it is full:
#   - writes through the mount fail with ENOSPC (reported by cat, which
#     checks write() and close()), and so does tabletctl set;
#   - the daemon keeps serving reads, through the mount and the socket;
#   - once space is freed, writes succeed again without a remount;
#   - filled up again and unmounted while full, the store mounts
#     read-write on the full disk with every acknowledged write readable
#     (the replayed log stays in memory until there is room to flush it);
#     once space is freed it mounts read-write with all of them, nothing
#     that failed is visible, whole or torn, and tabletctl check is clean.
# Needs root to mount the tmpfs (skipped, 77, otherwise).
set -eu
. "${top_srcdir:?}/tests/fs/lib.sh"

fs_small_store 6m

MOUNT_OPTS="-o memtable_size=256k"
ctl init
ctl createtable t families=f
# Space to give back later, twice.
dd if=/dev/zero of="$T/small/ballast1" bs=1024 count=1024 2>/dev/null
dd if=/dev/zero of="$T/small/ballast2" bs=1024 count=2048 2>/dev/null
# Incompressible text (Snappy keeps it raw), so that flushes need as much
# room as the log; a different slice for each value, since a block of one
# value repeated compresses (the store, which deletes flushed log
# segments, then took thousands of values before it filled).
head -c 4718592 /dev/urandom | base64 -w 0 >"$T/chunk"
# value N SIZE: the text of value N, SIZE bytes.
value() {
	tail -c +$(($1 * 4099 % 6000000 + 1)) "$T/chunk" | head -c "$2"
}
# shellcheck disable=SC2086
fs_mount $MOUNT_OPTS
C=$M/t/r/f
mkdir -p "$C/before" "$C/fill" "$C/after"
echo kept >"$C/before/1"

# fill: write 64 KiB values until one fails, then 4 KiB and 64-byte
# ones, so that the disk is really full.  Each failure must be ENOSPC.
# A background compaction may free files meanwhile: when a size no
# longer fails within 1000 writes, the filling starts over at 64 KiB.
: >"$T/acked"
failed= n=0
fill() {
	rounds=0
	while :; do
		rounds=$((rounds + 1))
		[ $rounds -le 20 ] || fail "the tmpfs never filled"
		for size in 65536 4096 64; do
			err= k=0
			while [ $k -lt 1000 ]; do
				k=$((k + 1)) n=$((n + 1))
				if value $n $size | cat 2>"$T/err" \
				    >"$C/fill/$n"; then
					echo "$n $size" >>"$T/acked"
				else
					err=$(cat "$T/err")
					break
				fi
			done
			[ -n "$err" ] || continue 2
			case $err in
			*"No space left on device"*) ;;
			*) fail "a write on a full disk failed with: $err" ;;
			esac
			failed="$failed $n"
		done
		break
	done
}

# Every acknowledged value reads back exactly, and nothing that failed
# is there.
verify_acked() {
	check_eq "$1: before" "$(cat "$C/before/1")" kept
	while read -r k size; do
		value "$k" "$size" | cmp -s - "$C/fill/$k" ||
		    fail "$1: acknowledged value $k lost or wrong"
	done <"$T/acked"
	for k in $failed; do
		[ ! -e "$C/fill/$k" ] || fail "$1: a failed write left $k"
	done
}

fill
acked=$(wc -l <"$T/acked")
[ "$acked" -ge 3 ] || fail "only $acked values written before the disk filled"
echo "# disk full after $acked values"

# Full: more writes fail the same way, through the mount and tabletctl.
# A compaction that ends after the fill can still free room (seen under
# the sanitizers: a 64 KiB write succeeded right after the fill): a write
# that then succeeds is acknowledged like any other, and the disk is
# filled again, at most 5 times.
full_writes_fail() {
	tries=0
	while :; do
		tries=$((tries + 1))
		[ $tries -le 5 ] || fail "the disk does not stay full"
		n=$((n + 1))
		if value $n 65536 | cat 2>"$T/err" >"$C/fill/$n"; then
			echo "$n 65536" >>"$T/acked"
			fill
			continue
		fi
		failed="$failed $n"
		grep -q "No space left on device" "$T/err" ||
		    fail "a write on a full disk failed with: $(cat "$T/err")"
		if ctl set t r "f:x=$(head -c 1000 "$T/chunk")" \
		    2>"$T/err"; then
			fill
			continue
		fi
		grep -q "No space left on device" "$T/err" ||
		    fail "tabletctl set on a full disk: $(cat "$T/err")"
		return 0
	done
}
full_writes_fail
# Reads go on: through the mount, over the socket.
verify_acked "while full"
check_eq "lookup while full" \
    "$(ctl lookup t r columns=f:before | grep -c kept)" 1
ls "$C/fill" >/dev/null

# Space comes back: writes succeed again, without a remount.
rm "$T/small/ballast1"
i=0
until echo resumed 2>/dev/null | cat >"$C/after/1" 2>/dev/null; do
	i=$((i + 1))
	[ $i -le 20 ] || fail "writes did not resume once space was freed"
	sleep 0.1
done
check_eq "after" "$(cat "$C/after/1")" resumed
# The log reserves no space that the flushes need (log.h,
# reserve_headroom): a megabyte reserved here once took the room just
# freed, and this set failed with ENOSPC.  If it fails, say where the
# room went.
if ! ctl set t r f:ctl=again 2>"$T/err"; then
	cat "$T/err" >&2
	df -k "$T/small" >&2
	ls -l "$S" "$S/sst" "$S/log" "$S/tmp" >&2
	cat "$M/.status" >&2
	fail "tabletctl set once space was freed"
fi
check_eq "set after" "$(cat "$C/ctl/latest")" again

# Full again, and unmounted so: the last flush may fail, the data stays
# in the log.
fill
echo "# disk full again after $(wc -l <"$T/acked") values"
fs_unmount
# A read-write mount replays the log; its flush fails for want of room,
# so the replayed data stays in memory and in its segments
# (src/server/server.c, server_recover), and the store mounts all the same.
# shellcheck disable=SC2086
"$TABLETFS" $MOUNT_OPTS "$S" "$M" 2>"$T/mount.err" ||
    fail "read-write mount on a full disk: $(cat "$T/mount.err")"
fs_wait_mounted "$M" || fail "$M not mounted"
verify_acked "remounted full"
# Writes go on until the little room the unmount left is gone, then fail
# with ENOSPC again.
fill
echo "# disk full a third time after $(wc -l <"$T/acked") values"
verify_acked "remounted full, filled"
fs_unmount
rm "$T/small/ballast2"
# shellcheck disable=SC2086
fs_mount $MOUNT_OPTS
verify_acked "remounted"
check_eq "after kept" "$(cat "$C/after/1")" resumed
echo again >"$C/after/2"
check_eq "writes" "$(cat "$C/after/2")" again
ctl check >"$T/check" 2>&1 || { cat "$T/check" >&2; fail "check not clean"; }
