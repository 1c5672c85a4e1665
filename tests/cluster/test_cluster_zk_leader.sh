#!/bin/sh
# ZooKeeper's own failures under a serving cell, each round three: the
# ensemble's leader (found with `srvr`) killed with SIGKILL; the follower
# with the most tabletd sessions on it (`cons`) cut off from every other
# host (nft in its namespace: a minority of one, silent); the leader cut
# off likewise.  Each member comes back before the next fault.  Two
# writers (tabletctl, which reads the root location from ZooKeeper on
# every call) and the prober (tests/cluster/prober.py, straight to the
# servers) run throughout.  A tabletd that exits (its lease lost) is
# started again at once, as a supervisor would.
# Checked for each fault:
#  - the remaining two members have a leader within 15 s;
#  - the cell serves: a writer's write is acknowledged within the
#    session timeout + 5 s once the fault has settled (a session timeout);
# and at the end that every acknowledged write reads back.  Prints, per
# fault, the member each tabletd was attached to, which tabletd exited
# and when, the time to a new leader and the longest gaps between
# acknowledgements.  A tabletd whose ZooKeeper server is cut off loses
# its lease when ZooKeeper's client notices later than the lease lapses
# (docs/design.md section 5): that is reported, not failed.
# CLUSTER_ROUNDS sets the rounds (1; the long form 5).
set -eu
. "$(dirname "$0")/netns.sh"

ROUNDS=${CLUSTER_ROUNDS:-1}
LIMIT=$((SESSION_MS + 5000))
DAEMONS="m1 m2 s1 s2"
cluster_up 2

writers_start 2
prober_start s1 s2
ready_wait "$(serving_server)"

# Which member each host's sessions are attached to: "z1: s1 m2; z2: ...".
attached() {
	for i in 1 2 3; do
		at_hosts=$(zk_ask "$i" cons | sed -n 's|^ */\([0-9.]*\):.*|\1|p' |
		    sort -u | while read -r ip; do
			for h in $DAEMONS c1; do
				if [ "$(host_ip "$h")" = "$ip" ]; then
					printf '%s ' "$h"
				fi
			done
		done) || :
		printf 'z%s: %s; ' "$i" "${at_hosts:-none }"
	done
}

# The longest time (ms) between two of the prober's acknowledgements
# (from any server) from $1 to $2.
probe_gap() {
	awk -F '\t' -v a="$1" -v b="$2" '$4 == "0" && $3 >= a && $3 <= b {
		if (prev && $3 - prev > g) g = $3 - prev; prev = $3 }
	    END { printf "%.0f\n", g }' "$T/probes"
}

# check_fault WHAT T0 LEADER MS: the checks after a fault at T0 that
# left LEADER leading after MS ms; prints the figures.
check_fault() {
	cf_acked=$(acked_count)
	cf_start=$(now_ms)
	while [ "$(acked_count)" -le "$cf_acked" ]; do
		[ $(( $(now_ms) - cf_start )) -lt "$LIMIT" ] ||
		    fail "$1: no write acknowledged within $LIMIT ms"
		supervise
		sleep 0.05
	done
	cf_now=$(now_ms)
	cf_lost=$(exits_since "$2")
	cf_server=$(serving_server)
	echo "$1: new leader z$3 +$4 ms; exited: ${cf_lost:-none};" \
	    "$cf_server serves;" \
	    "longest gaps between acknowledgements: writers'" \
	    "$(ack_max_gap "$(( $2 - 1000 ))") ms, the prober's (straight to" \
	    "the servers) $(probe_gap "$(( $2 - 1000 ))" "$cf_now") ms"
	supervise
}

# Wait until a member other than $1 leads; prints it.
new_leader() {
	nl_end=$(( $(now_ms) + 15000 ))
	while :; do
		for i in 1 2 3; do
			[ "$i" = "$1" ] && continue
			if [ "$(zk_mode "$i")" = leader ]; then
				echo "$i"
				return 0
			fi
		done
		[ "$(now_ms)" -lt "$nl_end" ] || return 1
		sleep 0.05
	done
}

# Wait until every member serves again, then 2 s more.
rejoin() {
	zk_wait_quorum 30000 || fail "$1 did not rejoin the ensemble"
	supervise
	sleep 1
}

for round in $(seq "$ROUNDS"); do
	sleep 2
	leader=$(zk_leader)
	[ -n "$leader" ] || fail "round $round: no ZooKeeper leader"
	echo "round $round: attached: $(attached)"
	t0=$(now_ms)
	kill -KILL "$(zk_member_pid "$leader")"
	next=$(new_leader "$leader") ||
	    fail "round $round: no new leader after z$leader was killed"
	check_fault "round $round: z$leader (leader) killed" "$t0" "$next" \
	    "$(( $(now_ms) - t0 ))"
	zk_member_start "$leader"
	rejoin "z$leader"

	for which in follower leader; do
		leader=$(zk_leader)
		[ -n "$leader" ] || fail "round $round: no ZooKeeper leader"
		# The follower with the most tabletd sessions on it.
		victim=$leader
		if [ "$which" = follower ]; then
			most=-1
			for i in 1 2 3; do
				[ "$i" = "$leader" ] && continue
				k=$(zk_ask "$i" cons | grep -c "/$NET.[23][0-9]:" || :)
				if [ "$k" -gt "$most" ]; then
					most=$k
					victim=$i
				fi
			done
		fi
		echo "round $round: attached: $(attached)"
		others=""
		for h in z1 z2 z3 m1 m2 c1 s1 s2; do
			[ "$h" = "z$victim" ] || others="$others $h"
		done
		t0=$(now_ms)
		# shellcheck disable=SC2086
		partition "z$victim" $others
		if [ "$which" = leader ]; then
			next=$(new_leader "$victim") || fail "round $round:" \
			    "no new leader after z$victim was cut off"
		else
			next=$leader
		fi
		took=$(( $(now_ms) - t0 ))
		# Longer than a lease: whoever was to lose it has.
		settle "$SESSION_MS"
		check_fault "round $round: z$victim ($which) cut off" "$t0" \
		    "$next" "$took"
		heal "z$victim"
		rejoin "z$victim"
	done
done
echo "tabletd processes started again after a lost lease: $restarts"
background_stop
n=$(check_acked)
echo "all $n acknowledged writes (writers and prober) read back after" \
    "$ROUNDS rounds of ZooKeeper faults"
cluster_ok=1
