#!/bin/sh
# Single-row operations stay linearizable under faults (issue 28 item
# 3).  A cell across namespaces (netns.sh: three ZooKeeper members, two
# masters, two servers) and, for each seeded fault schedule, three
# history clients on the client host (histclient.c, two threads each:
# puts, reads, check-and-mutates and increments on their own rows) while
# the faults drawn from the seed run one after another, each healed and
# followed by a wait until the cell serves again:
#
#	server_zk	the serving server cut off from ZooKeeper (nft)
#	master_zk	the elected master cut off from ZooKeeper
#	kill_server	kill -9 of the serving server
#	server_clients	the serving server cut off from the clients, 6 s (longer
#			than their 4 s deadline: calls in flight end unknown)
#	loss		30 % of what the serving server sends dropped, 4 s
#
# A tabletd that exits is started again, as a supervisor would (again
# and again while ZooKeeper holds its old session), and the next fault
# waits until every one runs.  Then
# the clients stop (SIGTERM), the counter is read, and linearizable.py
# must find every row's history linearizable, no increment lost or
# doubled.  Prints each schedule, the time from each fault until the
# cell served a read again (the fault's own length included), and the ops (ok, fail, unknown).  A failing history
# is kept in $top_builddir/tests/cluster/test_cluster_linearizable.d/
# (its path printed) with the clients' histories and the daemons' logs.
#
# CLUSTER_SCHEDULES sets the schedules (2), CLUSTER_FAULTS the faults in
# each (3), CLUSTER_SEED the first seed (1; schedule i uses SEED + i -
# 1).  The long form, by hand:
#   CLUSTER_SCHEDULES=20 top_builddir=_build top_srcdir=. \
#	sh tests/cluster/test_cluster_linearizable.sh
set -eu
. "$(dirname "$0")/netns.sh"

HISTCLIENT=$top_builddir/tests/cluster/histclient
CHECKER=$top_srcdir/tests/cluster/linearizable.py
[ -x "$HISTCLIENT" ] || skip "histclient not built"
SCHEDULES=${CLUSTER_SCHEDULES:-2}
FAULTS=${CLUSTER_FAULTS:-3}
SEED=${CLUSTER_SEED:-1}
CLIENTS=3
LIMIT=$((SESSION_MS + 10000))
KEEP=$top_builddir/tests/cluster/test_cluster_linearizable.d
DAEMONS="m1 m2 s1 s2"

cluster_up 2

# The faults of schedule seed $1: FAULTS names, drawn from the seed.
schedule_of() {
	python3 -c 'import random, sys
r = random.Random(int(sys.argv[1]))
kinds = ["server_zk", "master_zk", "kill_server", "server_clients", "loss"]
print(" ".join(r.choice(kinds) for _ in range(int(sys.argv[2]))))' \
	    "$1" "$FAULTS"
}

# The serving server into fa_host, waiting up to LIMIT ms for one.
serving_wait() {
	sw_end=$(( $(now_ms) + LIMIT ))
	until fa_host=$(serving_server) && [ -n "$fa_host" ]; do
		[ "$(now_ms)" -lt "$sw_end" ] || fail "no server serves"
		supervise
		sleep 0.1
	done
}

# Wait up to LIMIT ms until daemon $1 (pid $2) exits.
exit_wait() {
	ew_end=$(( $(now_ms) + LIMIT ))
	while alive "$2"; do
		[ "$(now_ms)" -lt "$ew_end" ] ||
		    fail "$1 still runs, cut off from ZooKeeper"
		sleep 0.05
	done
}

# fault KIND: inject it and heal it; the host it hit in fa_host.
fault() {
	case $1 in
	server_zk)
		serving_wait
		fa_pid=$(tabletd_pid "$fa_host")
		partition "$fa_host" z1 z2 z3
		exit_wait "$fa_host" "$fa_pid"
		heal "$fa_host"
		;;
	master_zk)
		fa_host=$(elected_master)
		[ -n "$fa_host" ] || fail "no master is elected"
		fa_pid=$(tabletd_pid "$fa_host")
		partition "$fa_host" z1 z2 z3
		exit_wait "$fa_host" "$fa_pid"
		heal "$fa_host"
		;;
	kill_server)
		serving_wait
		kill -KILL "$(tabletd_pid "$fa_host")"
		;;
	server_clients)
		serving_wait
		partition "$fa_host" c1
		sleep 6
		heal "$fa_host"
		;;
	loss)
		serving_wait
		hexec "$fa_host" nft -f - <<EOF
table inet chaos {
	chain output {
		type filter hook output priority 0; policy accept;
		oifname "eth0" numgen random mod 100 < 30 drop
	}
}
EOF
		sleep 4
		hexec "$fa_host" nft delete table inet chaos
		;;
	*) fail "no fault $1" ;;
	esac
}

# Wait until a read through ZooKeeper (a 1 s deadline, so that the
# supervisor goes on meanwhile) is answered, starting again what exited.
served_wait() {
	until hexec c1 "$HISTCLIENT" -c "$CELL" -p probe- -f -D 1000 \
	    >/dev/null 2>>"$T/probe.err"; do
		[ $(( $(now_ms) - $1 )) -lt $((LIMIT * 2)) ] ||
		    fail "the cell did not serve again"
		supervise
	done
}

# Wait until every daemon runs again (a server's or master's new start
# fails while ZooKeeper still holds its old session) and one serves, so
# that the next fault has a standby to fail over to.
whole_wait() {
	ww_end=$(( $(now_ms) + LIMIT * 2 ))
	while :; do
		supervise
		ww_down=""
		for d in $DAEMONS; do
			[ -n "$(tabletd_pid "$d")" ] || ww_down="$ww_down $d"
		done
		[ -z "$ww_down" ] && [ -n "$(serving_server)" ] && return
		[ "$(now_ms)" -lt "$ww_end" ] ||
		    fail "not running again:${ww_down:- a serving server}"
		sleep 0.3
	done
}

# Send SIGTERM to the history clients (the client host's histclient
# processes) and wait for them.
clients_stop() {
	for p in $(ip netns pids "$P-c1"); do
		[ "$(cat "/proc/$p/comm" 2>/dev/null)" = histclient ] &&
		    kill -TERM "$p"
	done
	for p in $cs_pids; do
		wait "$p" || fail "a history client failed (status $?)"
	done
}

# Keep schedule $1's histories, the checker's verdict and the logs.
schedule_keep() {
	sk_dir=$KEEP/schedule-$1
	rm -rf "$sk_dir"
	mkdir -p "$sk_dir"
	cp "$T"/hist."$1".* "$T/check.$1" "$sk_dir/"
	[ -f "$T/failed.$1.jsonl" ] && cp "$T/failed.$1.jsonl" "$sk_dir/"
	cp -r "$T/logs" "$sk_dir/"
	echo "$sk_dir"
}

t_start=$(now_ms)
total_ops=0
for i in $(seq "$SCHEDULES"); do
	seed=$((SEED + i - 1))
	faults=$(schedule_of "$seed")
	prefix="s$seed-"
	cs_pids=""
	for c in $(seq "$CLIENTS"); do
		hexec c1 "$HISTCLIENT" -c "$CELL" -i "$c" -s "$seed" \
		    -p "$prefix" -o "$T/hist.$i.$c.jsonl" -d 600000 -r 6 \
		    -t 2 -D 4000 2>>"$T/logs/histclient.log" &
		cs_pids="$cs_pids $!"
	done
	sleep 2
	report=""
	for f in $faults; do
		t0=$(now_ms)
		fault "$f"
		supervise
		served_wait "$t0"
		report="$report $f($fa_host) $(( $(now_ms) - t0 )) ms;"
		settle 1000
		whole_wait
	done
	clients_stop
	final=$(hexec c1 "$HISTCLIENT" -c "$CELL" -p "$prefix" -f -D 30000) ||
	    fail "schedule $i: the counter could not be read"
	if ! python3 "$CHECKER" --counter "${prefix}ctr" --final "$final" \
	    --keep "$T/failed.$i.jsonl" "$T"/hist."$i".*.jsonl \
	    >"$T/check.$i" 2>&1; then
		cat "$T/check.$i"
		echo "schedule $i (seed $seed):$report"
		fail "schedule $i is not linearizable: kept in" \
		    "$(schedule_keep "$i")"
	fi
	ops=$(sed -n 's/^history: \([0-9]*\) ops (\([^)]*\)).*/\1 (\2)/p' \
	    "$T/check.$i")
	total_ops=$((total_ops + ${ops%% *}))
	ok=$(echo "$ops" | sed 's/.*(\([0-9]*\) ok.*/\1/')
	[ "$ok" -ge 1000 ] ||
	    fail "schedule $i: only $ok ops went through: nothing was tested"
	echo "schedule $i (seed $seed):$report ops $ops, counter $final:" \
	    "linearizable"
	sed -n 's/^\(not acknowledged: .*\)/schedule '"$i"': \1/p' "$T/check.$i"
	# Tens of MB a schedule: kept only with CLUSTER_KEEP.
	[ -n "${CLUSTER_KEEP:-}" ] || rm -f "$T"/hist."$i".*
done
echo "$SCHEDULES schedules, $total_ops ops, no violation, in" \
    "$(( ($(now_ms) - t_start) / 1000 )) s after the cell was up;" \
    "$restarts starts of a tabletd that had exited"
cluster_ok=1
