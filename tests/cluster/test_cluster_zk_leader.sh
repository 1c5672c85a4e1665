#!/bin/sh
# ZooKeeper's own failures under a serving cell: first the ensemble's
# leader (found with `srvr`) killed with SIGKILL, then, once it is back,
# the leader of the moment cut off from every other host (nft in its
# namespace: a minority of one, silent).  Two writers (tabletctl, which
# reads the root location from ZooKeeper on every call) and the prober
# (tests/cluster/prober.py, straight to the servers) run throughout.
# Checked for each fault:
#  - the remaining two members elect a leader within 15 s;
#  - no tabletd loses its lease (ZooKeeper's failover is shorter than
#    the lease, 0.8 of the session timeout; the figures show by how
#    much), and no server other than the first ever serves;
#  - the serving server goes on acknowledging the prober's writes
#    throughout, and the writers' writes go on once ZooKeeper serves;
#  - every acknowledged write reads back.
# Prints the figures.  CLUSTER_ROUNDS sets the rounds (1; the long form
# 5).
set -eu
. "$(dirname "$0")/netns.sh"

ROUNDS=${CLUSTER_ROUNDS:-1}
cluster_up 2

writers_start 2
prober_start s1 s2
server=$(serving_server)
[ -n "$server" ] || fail "no server holds the store"
server_addr=$(host_ip "$server"):7000

# The longest time (ms) between two of the prober's acknowledgements
# from the serving server from $1 to $2.
probe_gap() {
	awk -F '\t' -v s="$server_addr" -v a="$1" -v b="$2" \
	    '$1 == s && $4 == "0" && $3 >= a && $3 <= b {
		if (prev && $3 - prev > g) g = $3 - prev; prev = $3 }
	    END { printf "%.0f\n", g }' "$T/probes"
}

# check_fault WHAT T0: the checks after a fault at T0 once the ensemble
# has its leader again; prints the figures.
check_fault() {
	cf_end=$(( $(now_ms) + 3000 ))	# writes through ZooKeeper again
	cf_acked=$(acked_count)
	while [ "$(acked_count)" -le "$cf_acked" ]; do
		[ "$(now_ms)" -lt "$cf_end" ] ||
		    fail "$1: no write acknowledged after ZooKeeper's failover"
		sleep 0.05
	done
	cf_now=$(now_ms)
	cf_lost=$(cat "$T"/logs/[ms]*.log | awk -v a="$2" \
	    '$1 >= a && /lease lost/' | wc -l)
	[ "$cf_lost" -eq 0 ] || {
		cat "$T"/logs/[ms]*.log | awk -v a="$2" '$1 >= a' >&2
		echo "$1: $cf_lost tabletd processes lost their lease" >&2
	}
	[ "$(serving_server)" = "$server" ] ||
	    fail "$1: $server no longer serves"
	cf_served=$(awk -F '\t' -v s="$server_addr" -v a="$2" \
	    '$1 == s && $4 == "0" && $2 >= a' "$T/probes" | wc -l)
	[ "$cf_served" -gt 0 ] || fail "$1: $server acknowledged nothing after"
	echo "$1: new leader z$3 +$4 ms; no lease lost; $server" \
	    "acknowledged $cf_served prober writes since, longest gap" \
	    "$(probe_gap "$2" "$cf_now") ms; writers' longest gap" \
	    "$(ack_max_gap "$(( $2 - 1000 ))") ms"
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

for round in $(seq "$ROUNDS"); do
	sleep 2
	leader=$(zk_leader)
	[ -n "$leader" ] || fail "round $round: no ZooKeeper leader"
	t0=$(now_ms)
	kill -KILL "$(zk_member_pid "$leader")"
	next=$(new_leader "$leader") ||
	    fail "round $round: no new leader after z$leader was killed"
	check_fault "round $round: z$leader (leader) killed" "$t0" "$next" \
	    "$(( $(now_ms) - t0 ))"
	zk_member_start "$leader"
	zk_wait_quorum 30000 ||
	    fail "round $round: z$leader did not rejoin the ensemble"

	sleep 2
	leader=$(zk_leader)
	[ -n "$leader" ] || fail "round $round: no ZooKeeper leader"
	others=""
	for h in z1 z2 z3 m1 m2 c1 s1 s2; do
		[ "$h" = "z$leader" ] || others="$others $h"
	done
	t0=$(now_ms)
	# shellcheck disable=SC2086
	partition "z$leader" $others
	next=$(new_leader "$leader") ||
	    fail "round $round: no new leader after z$leader was cut off"
	took=$(( $(now_ms) - t0 ))
	sleep 2		# longer than it takes the cut-off member to step down
	check_fault "round $round: z$leader (leader) cut off" "$t0" "$next" \
	    "$took"
	heal "z$leader"
	zk_wait_quorum 30000 ||
	    fail "round $round: z$leader did not rejoin the ensemble"
done
background_stop
n=$(check_acked)
echo "all $n acknowledged writes (writers and prober) read back after" \
    "$ROUNDS rounds of ZooKeeper faults"
cluster_ok=1
