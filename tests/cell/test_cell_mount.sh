#!/bin/sh
# A FUSE mount of a cell (tabletfs zk://.../cell MNT) while the serving
# tablet server is killed (-9) under four shell writers and two readers
# through the mount.  Each writer makes rows with mkdir -p and
# /bin/echo v > ROW/f/q/latest (coreutils' echo fails when close() does,
# and close() is where the mount commits) and records the rows whose
# echo succeeded.  Proves: the mount stays mounted across the kill,
# writes through it resume within the session timeout + 5 s, every
# acknowledged write reads back through the mount (cat) and through
# tabletctl, and ls, cat and find work on the mounted cell; df of the
# mount shows the serving server's storage (statfs over RPC).  Prints the
# times.  CELL_ROUNDS sets the kills (1 here; the long form runs 10).
# Skips (77) without /dev/fuse or the right to mount.
set -eu
. "$(dirname "$0")/lib.sh"

cell_mount_needs

ROUNDS=${CELL_ROUNDS:-1}
M=$T/mnt
cell_start 3
ctl createtable t families=f
cell_mount "$M"

# df: the cell's storage is a directory on this host here, so the mount
# must report its filesystem's size and block size exactly (a cell on
# RADOS, CELL_START_ARGS=--rados, reports its pool's instead).
if [ ! -f "$C/storage-url" ]; then
	got=$(stat -f -c '%b %S' "$M") || fail "statfs of $M failed"
	want=$(stat -f -c '%b %S' "$C/storage")
	[ "$got" = "$want" ] ||
	    fail "statfs of the mount: '$got' blocks and size, want '$want'"
	size=$(df -P -k "$M" | awk 'NR == 2 { print $2 }')
	[ "${size:-0}" -gt 0 ] ||
	    fail "df of the mount shows size '${size:-}'"
	echo "df of the mount: $size KiB, as the storage's filesystem"
fi

mount_writer() {
	n=0
	: >"$T/acked.$1"
	while [ ! -e "$T/stop" ]; do
		n=$((n + 1))
		row=m$1-$n
		if mkdir -p "$M/t/$row/f/q" 2>>"$T/writer.err" &&
		    /bin/echo "v$1-$n" >"$M/t/$row/f/q/latest" \
		    2>>"$T/writer.err"; then
			# The value as tabletctl export spells it.
			printf '%s\tv%s-%s\\x0a\t%s\n' "$row" "$1" "$n" \
			    "$(now_ms)" >>"$T/acked.$1"
		fi
	done
}

mount_reader() {
	while [ ! -e "$T/stop" ]; do
		ls "$M/t" >/dev/null 2>&1 || :
		row=$(tail -n 1 "$T/acked.1" 2>/dev/null | cut -f 1)
		[ -z "$row" ] || cat "$M/t/$row/f/q/latest" >/dev/null 2>&1 || :
	done
}

for i in 1 2 3 4; do
	cell_spawn mount_writer "$i"
done
for i in 1 2; do
	cell_spawn mount_reader
done

next=4
for round in $(seq "$ROUNDS"); do
	sleep 2
	victim=$(cell_serving_pid)
	[ -n "$victim" ] || fail "round $round: nobody holds the store"
	kill -9 "$victim"
	t0=$(now_ms)
	sleep 0.2	# acknowledgements already on their way
	before=$(cell_acked_count)
	until [ "$(cell_acked_count)" -gt "$before" ]; do
		mountpoint -q "$M" || fail "round $round: $M was unmounted"
		[ $(( $(now_ms) - t0 )) -lt $((LIMIT * 2)) ] ||
		    fail "round $round: writes through the mount did not resume"
		sleep 0.02
	done
	took=$(( $(now_ms) - t0 ))
	echo "round $round: killed $victim after $before writes through" \
	    "the mount; writes resumed in $took ms"
	[ "$took" -le "$LIMIT" ] ||
	    fail "round $round: took $took ms, more than $LIMIT"
	mountpoint -q "$M" || fail "round $round: $M was unmounted"
	cell_server_start "$next"
	next=$((next + 1))
done
cell_spawned_stop
mountpoint -q "$M" || fail "$M was unmounted"

# Through tabletctl, then through the mount.
n=$(cell_check_acked)
bad=0
while IFS="$(printf '\t')" read -r row value; do
	value=${value%\\x0a}
	got=$(cat "$M/t/$row/f/q/latest" 2>&1) || got="(cat failed: $got)"
	if [ "$got" != "$value" ]; then
		echo "$row: through the mount '$got', want '$value'" >&2
		bad=$((bad + 1))
	fi
done <"$T/acked"
[ "$bad" -eq 0 ] || fail "$bad of $n acknowledged writes do not read back through the mount"

# The tools on the mounted cell: ls lists every stored row (and maybe
# directories of writes that failed, which mkdir made in memory), find
# walks to every version, cat reads one.
cut -f 1 "$T/stored" | sort -u >"$T/rows"
ls "$M/t" | sort >"$T/listed"
unlisted=$(comm -23 "$T/rows" "$T/listed" | wc -l)
[ "$unlisted" -eq 0 ] ||
    fail "ls of the mount misses $unlisted of $(wc -l <"$T/rows") rows"
versions=$(find "$M/t" -type f | wc -l)
[ "$versions" -ge "$n" ] ||
    fail "find sees $versions versions, fewer than $n acknowledged"
first=$(head -n 1 "$T/acked")
[ "$(cat "$M/t/${first%%	*}/f/q/latest")" = "$(printf '%s' \
    "${first#*	}" | sed 's/\\x0a$//')" ] ||
    fail "cat of ${first%%	*} gives another value"
echo "all $n acknowledged writes read back through tabletctl and the" \
    "mount after $ROUNDS kills; ls and find agree"

# A mount stopped for longer than its own ZooKeeper session (10 s: its
# lease is then over on its clock) locates the serving server again
# through a new session after the next failover.
daemon=$(pgrep -f -- "^tabletfs: .* on $M\$") || fail "no daemon for $M"
kill -STOP "$daemon"
sleep 11
kill -CONT "$daemon"
victim=$(cell_serving_pid)
kill -9 "$victim"
t0=$(now_ms)
mkdir -p "$M/t/late/f/q" 2>"$T/late.err" &&
    /bin/echo after >"$M/t/late/f/q/latest" 2>>"$T/late.err" ||
    fail "a write after the mount's session expired: $(cat "$T/late.err")"
check=$(cat "$M/t/late/f/q/latest")
[ "$check" = after ] || fail "read back '$check' after the session expired"
echo "after 11 s stopped, the mount wrote through the next server in" \
    "$(( $(now_ms) - t0 )) ms"
fusermount3 -u "$M" || fail "unmount failed"
cell_ok=1
