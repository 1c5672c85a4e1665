#!/bin/sh
# test_cell_rados_osd.sh - a cell on RADOS whose only OSD fails under
# writes (issue 27 item 4; docs/rados.md, "When the OSD fails").  Ceph
# runs on bluestore in a file (CEPH_OBJECTSTORE=bluestore: memstore
# loses everything at a kill -9), with RADOS ops timing out after
# OP_TIMEOUT s (rados osd op timeout).  Two servers: the one scripts/cell
# starts serves, one started here (so that its exit status can be read)
# stands by.  Three writers (tests/cell/lib.sh) write through tabletctl
# throughout, and one through a FUSE mount of the cell (as
# tests/cell/test_cell_mount.sh does: a client that lives through the
# outage, where each tabletctl first reads the cell's secret, which
# times out while the OSD is away).  Proves:
#  - kill -9 of the OSD and its restart at once (down for less than the
#    timeout): the writers stall and resume, on the same server; the
#    stall is measured;
#  - SIGSTOP of the OSD for longer than the timeout: the serving
#    server's log write times out (and the truncate that would undo
#    it), it acknowledges nothing more, says
#    its store refuses writes and exits 5 (TABLETD_EXIT_STORAGE); once
#    the OSD goes on (SIGCONT) the standby serves and the writers resume;
#  - every acknowledged write reads back at the end.
# Skips (77) without Ceph, librados, Java, ZooKeeper or FUSE, and under
# ThreadSanitizer (test_env_rados.sh says why).
set -eu
. "${top_srcdir:?top_srcdir must be set}/tests/rados/lib.sh"
[ -c /dev/fuse ] || skip "no /dev/fuse"
command -v fusermount3 >/dev/null 2>&1 || skip "no fusermount3"
[ -x "$TABLETFS" ] || skip "tabletfs not built"

# Above what a restart of the OSD takes here (7-10 s), so that phase 1
# stalls rather than fails; the bound of every wait below.
OP_TIMEOUT=${OP_TIMEOUT:-12}

CEPH_OBJECTSTORE=bluestore
CEPH_CONF_EXTRA="rados osd op timeout = $OP_TIMEOUT"
export CEPH_OBJECTSTORE CEPH_CONF_EXTRA
CELL_START_ARGS=--rados
cell_start 1
CEPH_DIR=$C/ceph
CEPH=$top_srcdir/scripts/ceph
echo "# cell on $(cat "$C/storage-url") (bluestore) up at $(elapsed) s"

# The latest time (ms) at which a writer was acknowledged.
last_ack() {
	cat "$T"/acked.* 2>/dev/null | cut -f 3 | sort -n | tail -n 1
}

# wait_acks N MS: wait up to MS ms until N writes more than now are
# acknowledged; false if they were not.
wait_acks() {
	wa_want=$(( $(cell_acked_count) + $1 ))
	wa_end=$(( $(now_ms) + $2 ))
	until [ "$(cell_acked_count)" -ge "$wa_want" ]; do
		[ "$(now_ms)" -lt "$wa_end" ] || return 1
		sleep 0.1
	done
}

# The longest time (ms) without an acknowledgement from $1 on.
longest_gap() {
	cat "$T"/acked.* | cut -f 3 | sort -n |
	    awk -v a="$1" 'BEGIN { p = a } $1 >= a { if ($1 - p > g)
	    g = $1 - p; p = $1 } END { print g + 0 }'
}

# What the writers were told, most frequent first.
writer_errors() {
	sed 's/[0-9][0-9]*/N/g' "$T/writer.err" 2>/dev/null | sort |
	    uniq -c | sort -rn | head -n "${1:-5}" || :
}

# mount_writer N: rows mN-1, mN-2, ... through the mount (coreutils'
# echo fails when close(), where the mount commits, fails).
mount_writer() {
	n=0
	: >"$T/acked.m$1"
	while [ ! -e "$T/stop" ]; do
		n=$((n + 1))
		row=m$1-$n
		cw_begin=$(now_ms)
		if mkdir -p "$M/t/$row/f/q" 2>>"$T/writer.err" &&
		    /bin/echo "v$1-$n" >"$M/t/$row/f/q/latest" \
		    2>>"$T/writer.err"; then
			# The value as tabletctl export spells it.
			printf '%s\tv%s-%s\\x0a\t%s\t%s\n' "$row" "$1" "$n" \
			    "$(now_ms)" "$cw_begin" >>"$T/acked.m$1"
		fi
	done
}

ctl createtable t families=f
M=$T/mnt
cell_mount "$M"
server=$(cell_serving_pid)
[ -n "$server" ] || fail "no server holds the store's lock"
cell_child_start
standby=${cell_children# }
for i in 1 2 3; do
	cell_spawn cell_writer "$i"
done
cell_spawn mount_writer 1
wait_acks 20 10000 || fail "the writers do not write"

# 1. kill -9 of the OSD, restarted at once.
t0=$(now_ms)
n0=$(cell_acked_count)
"$CEPH" kill-osd --dir "$CEPH_DIR"
"$CEPH" start-osd --dir "$CEPH_DIR"
back=$(now_ms)
wait_acks 10 $((OP_TIMEOUT * 1000)) || {
	writer_errors >&2
	fail "the writers did not resume after the OSD restarted"
}
gap=$(longest_gap "$t0")
[ "$(cell_serving_pid)" = "$server" ] ||
    fail "the server changed: $(cell_serving_pid)"
! grep -q 'refuses writes' "$C"/logs/server-1.log ||
    fail "the server gave up during an outage shorter than the timeout"
echo "# kill -9 and restart of the OSD: down $((back - t0)) ms, longest" \
    "stall of the writers $gap ms, no failover; $n0 acknowledged before" \
    "(at $(elapsed) s)"
: >"$T/writer.err"

# 2. SIGSTOP of the OSD past the client timeout.
osd=$(cat "$CEPH_DIR/osd.pid")
t0=$(now_ms)
kill -STOP "$osd"
# Two timeouts: the log's write, then the truncate that would have cut
# it off (src/log/log_writer.c), which fails too and poisons the log.
wait_log $((OP_TIMEOUT * 2000 + 5000)) "$C/logs/server-1.log" \
    'refuses writes until it is reopened' || {
	kill -CONT "$osd"
	writer_errors >&2
	fail "the server did not give up its store"
}
gaveup=$(now_ms)
n1=$(cell_acked_count)
last=$(last_ack)
sleep 1
[ "$(cell_acked_count)" -eq "$n1" ] ||
    fail "writes acknowledged with the OSD stopped"
kill -CONT "$osd"
back=$(now_ms)
wait_acks 10 $((OP_TIMEOUT * 1000 + LIMIT)) || {
	writer_errors >&2
	fail "the writers did not resume after the OSD came back"
}
new=$(cell_serving_pid)
[ "$new" = "$standby" ] || fail "the store is served by $new, not $standby"
echo "# SIGSTOP of the OSD: the server gave up its store" \
    "$((gaveup - t0)) ms after; no acknowledgement from $((last - t0)) ms" \
    "after the stop until SIGCONT at $((back - t0)) ms; the standby" \
    "serves, writers resumed $(( $(last_ack) - back )) ms after" \
    "(at $(elapsed) s); writers were told:"
writer_errors 4 | sed 's/^/#   /' | cut -c 1-150

cell_spawned_stop
n=$(cell_check_acked)
echo "# all $n acknowledged writes read back; took $(elapsed) s"
cell_ok=1
