#!/bin/sh
# kill -9 of the serving tablet server, round after round, under four
# writers and two readers (each a tabletctl process per call, through the
# client library): every write acknowledged before a kill is read back at
# the end, another server serves within the session timeout + 5 s, and
# the cell keeps answering.  CELL_ROUNDS sets the rounds (3 here, 1 under
# the sanitizers; the long form is CELL_ROUNDS=20).
set -eu
. "$(dirname "$0")/lib.sh"

# Under the sanitizers (TEST_SMALL) one round: the same paths, slower.
if [ -n "${TEST_SMALL:-}" ]; then
	ROUNDS=${CELL_ROUNDS:-1}
else
	ROUNDS=${CELL_ROUNDS:-3}
fi
cell_start 3
ctl createtable t families=f

reader() {
	while [ ! -e "$T/stop" ]; do
		ctl count t >/dev/null 2>&1 || :
	done
}

for i in 1 2 3 4; do
	cell_spawn cell_pair_writer "$i"
done
for i in 1 2; do
	cell_spawn reader
done

next=4
limit=$((SESSION_MS + 5000))
for round in $(seq "$ROUNDS"); do
	sleep 2
	victim=$(cell_serving_pid)
	[ -n "$victim" ] || fail "round $round: nobody holds the store"
	before=$(cat "$T"/acked.* | wc -l)
	kill -9 "$victim"
	t0=$(now_ms)
	# Served again once a write goes through.
	until ctl set t "probe-$round" f:q=x 2>/dev/null; do
		[ $(( $(now_ms) - t0 )) -lt $((limit * 2)) ] ||
		    fail "round $round: no server took over"
	done
	took=$(( $(now_ms) - t0 ))
	echo "round $round: killed $victim after $before writes; served again in $took ms"
	[ "$took" -le "$limit" ] ||
	    fail "round $round: took $took ms, more than $limit"
	[ "$(cell_serving_pid)" != "$victim" ] ||
	    fail "round $round: the killed server still holds the store"
	cell_server_start "$next"
	next=$((next + 1))
done
cell_spawned_stop

acked=$(cell_check_acked_pairs)
echo "all $acked acknowledged writes read back after $ROUNDS kills"
cell_ok=1
