#!/bin/sh
# The elected master cut off from ZooKeeper (nft drops, in its namespace,
# every packet to and from the three ZooKeeper hosts), under two writers
# and a reader (tabletctl, through the client library).  Checked, each
# tabletd's log stamped with its own clock (--log-time):
#  - it stops acting on its own clock: it logs "lease lost: no longer
#    master" within the session timeout of the cut (before its session
#    could have expired), exits with status 3, and logs nothing after
#    that (no assignment once its session may be gone);
#  - the standby is elected only after that (no instant with two masters
#    acting), within the session timeout + 5 s;
#  - the cell keeps serving reads and writes meanwhile (the serving
#    server does not depend on the master): writes are acknowledged and
#    reads return the last acknowledged value between the cut and the
#    standby's election, and no read ever returns anything else;
#  - the new master acts: the serving server is then killed (-9), and
#    the new master names another one, which serves;
#  - every acknowledged write reads back.
# Prints the figures.  CLUSTER_ROUNDS sets the rounds (1; the long form
# 5): each round heals the old master's host and starts a master there
# again, the next standby.
set -eu
SESSION_MS=${SESSION_MS:-2000}
. "$(dirname "$0")/netns.sh"

ROUNDS=${CLUSTER_ROUNDS:-1}
LIMIT=$((SESSION_MS + 5000))
cluster_up 3

writers_start 2
reader_start
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
	[ $((lost - t0)) -lt "$SESSION_MS" ] ||
	    fail "round $round: $old lost its lease +$((lost - t0)) ms after" \
	    "the cut, later than its session could have expired"
	elected=$(log_time "$standby" "elected master" "$t0")
	[ "$lost" -lt "$elected" ] ||
	    fail "round $round: $standby elected at $elected, $old lost" \
	    "its lease only at $lost"
	last_act=$(log_time_last "$old" "serves the cell")
	during=$(cut -f 3 "$T"/acked.* |
	    awk -v a="$t0" -v b="$elected" '$1 > a && $1 < b' | wc -l)
	[ "$during" -gt 0 ] ||
	    fail "round $round: no write acknowledged between the cut" \
	    "and the standby's election"
	reads=$(reads_count "$t0" "$elected" ok)
	[ "$reads" -gt 0 ] ||
	    fail "round $round: no read answered between the cut and the" \
	    "standby's election"
	failed=$(reads_count "$t0" "$elected" failed)
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
	    "timeline, each on its own clock:"
	[ -z "$last_act" ] ||
	    echo "round $round:   $((last_act - t0)) ms $old's last" \
	    "assignment (\"serves the cell\")"
	echo "round $round:   +$((lost - t0)) ms $old: lease lost, exit 3," \
	    "nothing logged after"
	echo "round $round:   +$((elected - t0)) ms $standby: elected master" \
	    "($((elected - lost)) ms after $old stopped)"
	echo "round $round:   meanwhile $during writes acknowledged, $reads" \
	    "reads answered ($failed failed); longest gap between" \
	    "acknowledged writes from the cut on: $gap ms"
	echo "round $round: then kill -9 of $victim: $new named by $standby" \
	    "and a write through the client library went through in" \
	    "$((t_served - t1)) ms"
	tabletd_start "$old" "$old" master
	tabletd_start "$victim" "$victim" server \
	    --listen "$(host_ip "$victim"):7000"
done
background_stop
wrong=$(reads_count 0 "$(now_ms)" wrong)
[ "$wrong" -eq 0 ] || {
	grep wrong "$T/reads" | head >&2
	fail "$wrong reads did not return the acknowledged value"
}
echo "$(reads_count 0 "$(now_ms)" ok) reads returned the last" \
    "acknowledged value, $(reads_count 0 "$(now_ms)" failed) failed," \
    "none returned anything else"
n=$(check_acked)
echo "all $n acknowledged writes read back after $ROUNDS master partitions"
cluster_ok=1
