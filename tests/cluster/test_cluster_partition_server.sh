#!/bin/sh
# The serving tablet server cut off from ZooKeeper (nft drops, in its
# namespace, every packet to and from the three ZooKeeper hosts) while
# its clients still reach it: it must stop answering, on its own clock,
# before another server serves the store.  Two writers (tabletctl, through
# ZooKeeper) and a prober (tests/cluster/prober.py, writing straight to
# every server, so that the cut-off one is still asked) record every
# acknowledgement; checked, on the one clock every namespace shares:
#  - the old server logs "lease lost" and exits with status 3 before the
#    new server logs "serving";
#  - the old server's last acknowledgement came before the first write
#    that the new server acknowledged was even sent (and the servers'
#    own stamps agree): no instant when both served;
#  - the cell serves again within the session timeout + 5 s;
#  - every acknowledged write reads back.
# Prints the figures.  CLUSTER_ROUNDS sets the rounds (1; the long form
# 5): each round cuts off whichever server serves, heals it afterwards
# and starts a server on that host again.
set -eu
. "$(dirname "$0")/netns.sh"

ROUNDS=${CLUSTER_ROUNDS:-1}
LIMIT=$((SESSION_MS + 5000))
cluster_up 3

writers_start 2
prober_start s1 s2 s3
ready_wait "$(serving_server)"
for round in $(seq "$ROUNDS"); do
	sleep 2
	old=$(serving_server)
	[ -n "$old" ] || fail "round $round: no server holds the store"
	old_pid=$(tabletd_pid "$old")
	old_addr=$(host_ip "$old"):7000
	acked0=$(acked_count)
	t0=$(now_ms)
	partition "$old" z1 z2 z3
	# The old one must go on its own; another must serve.
	while alive "$old_pid"; do
		[ $(( $(now_ms) - t0 )) -lt "$LIMIT" ] ||
		    fail "round $round: $old still runs, cut off from ZooKeeper"
		sleep 0.02
	done
	t_exit=$(now_ms)
	until ctl set t "probe-$round" f:q=x 2>>"$T/probe.err"; do
		[ $(( $(now_ms) - t0 )) -lt $((LIMIT * 2)) ] ||
		    fail "round $round: no server took over"
	done
	t_served=$(now_ms)
	new=$(serving_server)
	[ -n "$new" ] && [ "$new" != "$old" ] ||
	    fail "round $round: the store is not served by another server"
	sleep 1		# the prober's writes to the new server
	heal "$old"

	wait_log 2000 "$T/logs/$old.log" "^[0-9]* exit " ||
	    fail "round $round: no exit status of $old"
	status=$(awk -v a="$t0" '$1 >= a && $2 == "exit" { print $3; exit }' \
	    "$T/logs/$old.log")
	[ "$status" = 3 ] ||
	    fail "round $round: $old exited with ${status:-?}, not 3"
	lost=$(log_time "$old" "lease lost" "$t0")
	[ -n "$lost" ] || fail "round $round: $old did not log its lease lost"
	serving=$(log_time "$new" ": serving " "$t0")
	[ -n "$serving" ] || fail "round $round: $new did not log serving"
	[ "$lost" -lt "$serving" ] ||
	    fail "round $round: $new served at $serving, $old lost its" \
	    "lease only at $lost"
	master=$(elected_master)
	handed=$(log_time "$master" "$(host_ip "$new"):7000 serves the cell" \
	    "$t0")
	python3 "$PROBER" overlap "$T/probes" "$old_addr" "$((t0 - 2000))" \
	    >"$T/overlap" || {
		cat "$T/overlap" >&2
		fail "round $round: $old and $new overlap"
	}
	echo "round $round: cut $old off from ZooKeeper at 0 ms ($acked0 writes" \
	    "acknowledged before); $old: lease lost +$((lost - t0)) ms," \
	    "exit 3 +$((t_exit - t0)) ms; $new: serving +$((serving - t0)) ms;" \
	    "master $master named it +$(( ${handed:-$t0} - t0 )) ms;" \
	    "a write through ZooKeeper went through +$((t_served - t0)) ms"
	sed "s/^/round $round: /" "$T/overlap"
	[ $((t_served - t0)) -le "$LIMIT" ] ||
	    fail "round $round: took $((t_served - t0)) ms, more than $LIMIT"
	tabletd_start "$old" "$old" server --listen "$old_addr"
done
background_stop
n=$(check_acked)
echo "all $n acknowledged writes (writers and prober) read back after" \
    "$ROUNDS partitions"
cluster_ok=1
