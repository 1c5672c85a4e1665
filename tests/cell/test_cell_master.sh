#!/bin/sh
# kill -9 of the elected master under four writers (tabletctl through the
# client library), then of the master together with the serving tablet
# server.  Proves: a standby master is elected ("elected master") within
# the session timeout + 5 s; while no master is elected the serving
# server keeps acknowledging writes (a master is not on the data path);
# after the double kill the new master assigns the store to another
# server ("serves the cell") and writes go through again within the
# session timeout + 5 s; never two live elected masters; every write
# acknowledged at any time reads back at the end.  Prints the takeover
# times.  CELL_ROUNDS sets the rounds of both kills (1 here; the long
# form runs 10).
set -eu
. "$(dirname "$0")/lib.sh"

ROUNDS=${CELL_ROUNDS:-1}
cell_start 3
ctl createtable t families=f

for i in 1 2 3 4; do
	cell_spawn cell_writer "$i"
done

# The one elected master, failing if two live ones say they are.
one_master() {
	om=$(cell_master_pids)
	[ "$(echo "$om" | grep -c .)" -le 1 ] ||
	    fail "two live elected masters: $(echo "$om" | tr "\n" " ")"
	echo "$om"
}

# Wait until a master other than $1 is elected; print it.
new_master() {
	nm_t0=$(now_ms)
	while :; do
		nm=$(one_master)
		[ -n "$nm" ] && [ "$nm" != "$1" ] && break
		[ $(( $(now_ms) - nm_t0 )) -lt $((LIMIT * 2)) ] ||
		    fail "no standby took over from master $1"
		sleep 0.02
	done
	echo "$nm"
}

master_log() {
	grep -l "^tabletd master\[$1\]" "$C"/logs/master-*.log | head -n 1
}

next_master=3
next_server=4
for round in $(seq "$ROUNDS"); do
	# The master alone: the serving server does not notice.
	sleep 1
	m=$(one_master)
	[ -n "$m" ] || fail "round $round: no elected master"
	server=$(cell_serving_pid)
	before=$(cell_acked_count)
	kill -9 "$m"
	t0=$(now_ms)
	nm=$(new_master "$m")
	took=$(( $(now_ms) - t0 ))
	during=$(( $(cell_acked_count) - before ))
	echo "round $round: master $m killed; $nm elected in $took ms;" \
	    "$during writes acknowledged meanwhile"
	[ "$took" -le "$LIMIT" ] ||
	    fail "round $round: master takeover took $took ms > $LIMIT"
	[ "$during" -gt 0 ] ||
	    fail "round $round: no write acknowledged while no master ran"
	[ "$(cell_serving_pid)" = "$server" ] ||
	    fail "round $round: the store moved although its server lives"
	cell_master_start "$next_master"
	wait_log 10000 "$C/logs/master-$next_master.log" "waiting in the election" ||
	    fail "master $next_master did not stand"
	next_master=$((next_master + 1))

	# The master and the serving server together.
	sleep 1
	m=$(one_master)
	server=$(cell_serving_pid)
	[ -n "$server" ] || fail "round $round: nobody holds the store"
	kill -9 "$m" "$server"
	t0=$(now_ms)
	nm=$(new_master "$m")
	took_master=$(( $(now_ms) - t0 ))
	until ctl set t "probe-$round" f:q=x 2>>"$T/probe.err"; do
		[ $(( $(now_ms) - t0 )) -lt $((LIMIT * 2)) ] ||
		    fail "round $round: no server took over"
	done
	took=$(( $(now_ms) - t0 ))
	echo "round $round: master $m and server $server killed; $nm elected" \
	    "in $took_master ms; served again in $took ms"
	[ "$took_master" -le "$LIMIT" ] ||
	    fail "round $round: master takeover took $took_master ms > $LIMIT"
	[ "$took" -le "$LIMIT" ] ||
	    fail "round $round: serving again took $took ms > $LIMIT"
	now=$(cell_serving_pid)
	[ -n "$now" ] && [ "$now" != "$server" ] ||
	    fail "round $round: the store is not served by another server"
	log=$(master_log "$nm")
	grep -q "serves the cell" "$log" ||
	    fail "round $round: the new master $nm assigned nothing"
	cell_master_start "$next_master"
	next_master=$((next_master + 1))
	cell_server_start "$next_server"
	next_server=$((next_server + 1))
done
cell_spawned_stop
n=$(cell_check_acked)
echo "all $n acknowledged writes read back after $ROUNDS rounds"
cell_ok=1
