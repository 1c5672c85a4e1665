#!/bin/sh
# test_cell_rados.sh - a cell whose store is in a RADOS pool, and its
# fencing by blocklist (docs/rados.md, docs/design.md section 5).
# Starts a throwaway Ceph and ZooKeeper (scripts/cell start --rados,
# both stopped in the EXIT trap of tests/cell/lib.sh), one server of
# scripts/cell and two servers of this shell (so that their exit status
# can be read), and three writers (tests/cell/lib.sh) through tabletctl.
# Proves:
#  - kill -9 of the serving server under writes: another serves, and
#    writes go on;
#  - SIGSTOP of the serving server: once its session lapses the master
#    blocklists its RADOS client and breaks its lock (its log says so),
#    another server serves while it is still stopped, and a write begun
#    after that is acknowledged; the blocklist entry of its address is
#    in `ceph osd blocklist ls`;
#  - SIGCONT: it exits non-zero, its log saying it was fenced, with
#    nothing logged in between but its lease and its fencing;
#  - every acknowledged write reads back.
# Skips (77) without Ceph, librados, Java or ZooKeeper.
set -eu
. "${top_srcdir:?top_srcdir must be set}/tests/rados/lib.sh"

CELL_START_ARGS=--rados
cell_start 1
CONF=${C}/ceph/ceph.conf
echo "# cell on $(cat "$C/storage-url") up at $(elapsed) s"

# A write begun now, acknowledged within LIMIT (new tabletctl each try:
# it locates the store afresh); its row goes to $T/acked.p for the
# final check.  Prints how long it took (ms).
probe_write() {
	pw_t0=$(now_ms)
	until timeout 4 "$TABLETCTL" -s "$CELL" set t "$1" f:q="v$1" \
	    2>>"$T/probe.err"; do
		[ $(( $(now_ms) - pw_t0 )) -lt $((LIMIT * 2)) ] ||
		    fail "write $1 not acknowledged within $((LIMIT * 2)) ms"
		sleep 0.1
	done
	printf '%s\tv%s\t%s\t%s\n' "$1" "$1" "$(now_ms)" "$pw_t0" \
	    >>"$T/acked.p"
	echo $(( $(now_ms) - pw_t0 ))
}

ctl createtable t families=f
first=$(cell_serving_pid)
[ -n "$first" ] || fail "no server holds the store's lock"
cell_child_start
cell_child_start
for i in 1 2 3; do
	cell_spawn cell_writer "$i"
done
sleep 1

# kill -9 of the serving server under writes.
n0=$(cell_acked_count)
kill -KILL "$first"
took=$(probe_write after-kill)
now=$(cell_serving_pid)
[ -n "$now" ] && [ "$now" != "$first" ] ||
    fail "the store's lock still names the killed $first"
echo "# kill -9 of $first: $now serves, a write acknowledged $took ms" \
    "after; $n0 acknowledged before (at $(elapsed) s)"
grep -q "fenced client\.[0-9]* at .*(cookie $first-" "$C"/logs/master-*.log ||
    fail "the master did not fence the killed server's client"
sleep 1
[ "$(cell_acked_count)" -gt "$n0" ] || fail "the writers stopped"

# SIGSTOP of the serving server: fenced while stopped.
z=$(cell_serving_pid)
case " $cell_children " in
*" $z "*) ;;
*) fail "the store's holder $z is not a server of this test" ;;
esac
zlog=$(grep -l "server\[$z\]" "$C"/logs/server-c*.log)
zaddr=$(sed -n "s/.*server\[$z\]: serving .* as RADOS client\.[0-9]* at //p" \
    "$zlog")
[ -n "$zaddr" ] || fail "$z did not log its RADOS address"
kill -STOP "$z"
took=$(probe_write after-stop)
new=$(cell_serving_pid)
[ -n "$new" ] && [ "$new" != "$z" ] ||
    fail "the lock still names the stopped $z"
grep -q "fenced client\.[0-9]* at .*(cookie $z-" "$C"/logs/master-*.log ||
    fail "the master did not log fencing $z"
timeout 20 ceph -c "$CONF" osd blocklist ls 2>/dev/null >"$T/blocklist"
grep -qF "$zaddr" "$T/blocklist" ||
    fail "$zaddr of $z is not in ceph osd blocklist ls"
n1=$(cell_acked_count)
echo "# SIGSTOP of $z ($zaddr): fenced and blocklisted; $new serves," \
    "a write acknowledged $took ms after the stop (at $(elapsed) s)"
sleep 1

kill -CONT "$z"
cont=$(now_ms)
status=0
wait "$z" || status=$?
[ "$status" -ne 0 ] || fail "the fenced $z exited 0"
grep -q "server\[$z\]: fenced:" "$zlog" || fail "$z did not log its fencing"
after=$(sed -n "/server\[$z\]: serving/,\$p" "$zlog" | grep "server\[$z\]" |
    grep -v -e ": serving " -e ": lease lost" -e ": fenced:" || :)
[ -z "$after" ] || fail "the fenced $z logged: $after"
echo "# SIGCONT: $z exited $status in $(( $(now_ms) - cont )) ms:" \
    "$(grep "server\[$z\]: fenced:" "$zlog" | cut -c 1-100)..."

probe_write after-cont >/dev/null
cell_spawned_stop
n=$(cell_check_acked)
echo "# all $n acknowledged writes read back ($n1 before the SIGCONT);" \
    "$(wc -l <"$T/blocklist") blocklist lines; took $(elapsed) s"
cell_ok=1
