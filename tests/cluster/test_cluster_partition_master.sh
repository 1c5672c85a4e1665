#!/bin/sh
# The elected master cut off from ZooKeeper (nft drops, in its namespace,
# every packet to and from the three ZooKeeper hosts), under two writers.
# Checked, on the one clock every namespace shares:
#  - it stops acting on its own clock: it logs "lease lost: no longer
#    master" and exits with status 3, and logs nothing after that;
#  - the standby is elected only after that (no instant with two masters
#    acting), within the session timeout + 5 s;
#  - the cell keeps serving writes meanwhile (the serving server does
#    not depend on the master): writes are acknowledged between the cut
#    and the standby's election;
#  - the new master acts: the serving server is then killed (-9), and
#    the new master names another one, which serves;
#  - every acknowledged write reads back.
# Prints the figures.  CLUSTER_ROUNDS sets the rounds (1; the long form
# 5): each round heals the old master's host and starts a master there
# again, the next standby.
set -eu
. "$(dirname "$0")/netns.sh"

ROUNDS=${CLUSTER_ROUNDS:-1}
LIMIT=$((SESSION_MS + 5000))
cluster_up 3

writers_start 2
for round in $(seq "$ROUNDS"); do
	sleep 2
	old=$(elected_master)
	[ -n "$old" ] || fail "round $round: no master is elected"
	case $old in m1) standby=m2 ;; *) standby=m1 ;; esac
	[ -n "$(tabletd_pid "$standby")" ] ||
	    fail "round $round: no standby runs on $standby"
	old_pid=$(tabletd_pid "$old")
	t0=$(now_ms)
	partition "$old" z1 z2 z3
	while alive "$old_pid"; do
		[ $(( $(now_ms) - t0 )) -lt "$LIMIT" ] ||
		    fail "round $round: $old still runs, cut off from ZooKeeper"
		sleep 0.02
	done
	wait_log "$LIMIT" "$T/logs/$old.log" "^[0-9]* exit " ||
	    fail "round $round: no exit status of $old"
	until [ -n "$(log_time "$standby" "elected master" "$t0")" ]; do
		[ $(( $(now_ms) - t0 )) -lt "$LIMIT" ] ||
		    fail "round $round: the standby $standby was not elected"
		sleep 0.05
	done
	heal "$old"
	status=$(awk -v a="$t0" '$1 >= a && $2 == "exit" { print $3; exit }' \
	    "$T/logs/$old.log")
	[ "$status" = 3 ] ||
	    fail "round $round: $old exited with ${status:-?}, not 3"
	lost=$(log_time "$old" "lease lost: no longer master" "$t0")
	[ -n "$lost" ] || fail "round $round: $old did not log its lease lost"
	after=$(awk -v a="$lost" '$1 >= a && !/lease lost/ && $2 != "exit"' \
	    "$T/logs/$old.log")
	[ -z "$after" ] ||
	    fail "round $round: $old logged after its lease: $after"
	elected=$(log_time "$standby" "elected master" "$t0")
	[ "$lost" -lt "$elected" ] ||
	    fail "round $round: $standby elected at $elected, $old lost" \
	    "its lease only at $lost"
	during=$(cut -f 3 "$T"/acked.* |
	    awk -v a="$t0" -v b="$elected" '$1 > a && $1 < b' | wc -l)
	[ "$during" -gt 0 ] ||
	    fail "round $round: no write acknowledged between the cut" \
	    "and the standby's election"
	gap=$(ack_max_gap "$t0")

	# The new master acts: the serving server goes, another serves.
	victim=$(serving_server)
	[ -n "$victim" ] || fail "round $round: no server holds the store"
	t1=$(now_ms)
	kill -KILL "$(tabletd_pid "$victim")"
	until ctl set t "probe-$round" f:q=x 2>>"$T/probe.err"; do
		[ $(( $(now_ms) - t1 )) -lt $((LIMIT * 2)) ] ||
		    fail "round $round: no server took over from $victim"
	done
	t_served=$(now_ms)
	new=$(serving_server)
	[ -n "$new" ] && [ "$new" != "$victim" ] ||
	    fail "round $round: the store is not served by another server"
	log_time "$standby" "$(host_ip "$new"):7000 serves the cell" "$t1" |
	    grep -q . ||
	    fail "round $round: the new master $standby did not name $new"
	echo "round $round: cut master $old off from ZooKeeper at 0 ms;" \
	    "$old: lease lost +$((lost - t0)) ms, exit 3;" \
	    "$standby elected +$((elected - t0)) ms ($((elected - lost)) ms" \
	    "after $old stopped); $during writes acknowledged meanwhile," \
	    "longest gap between acknowledgements from the cut on: $gap ms;" \
	    "then kill -9 of $victim: $new named by $standby and serving" \
	    "in $((t_served - t1)) ms"
	tabletd_start "$old" "$old" master
	tabletd_start "$victim" "$victim" server \
	    --listen "$(host_ip "$victim"):7000"
done
background_stop
n=$(check_acked)
echo "all $n acknowledged writes read back after $ROUNDS master partitions"
cluster_ok=1
