#!/bin/sh
# The serving tablet server cut off from ZooKeeper (nft drops, in its
# namespace, every packet to and from the three ZooKeeper hosts) while
# its clients still reach it: it must stop answering, on its own clock,
# before the master hands the store to another server.  Two writers
# (tabletctl, through ZooKeeper) and a prober (tests/cluster/prober.py,
# writing straight to every server, so that the cut-off one is still
# asked) record every acknowledgement.  Each tabletd stamps its log lines
# with its own clock (--log-time), the prober's acknowledgements carry
# the serving server's stamp; checked, in this order:
#  1. the cut-off server still acknowledged the prober's writes after the
#     cut (clients reach it: only ZooKeeper is cut off);
#  2. its last acknowledgement (its stamp) came no later than the
#     millisecond it logged "lease lost" in (its clock), and it exited
#     with status 3;
#  3. "lease lost" came before the new server logged "serving" (its
#     clock) and before the master logged that the new one serves the
#     cell (the master's clock);
#  4. the new server's first acknowledgement to the prober was sent after
#     the old one's last answer, and stamped after it (no instant when
#     both served);
#  5. the cell serves again, through the client library, within the
#     session timeout + 5 s, and every acknowledged write reads back.
# Prints the timeline.  CLUSTER_ROUNDS sets the rounds (1; the long form
# 5): each round cuts off whichever server serves, heals it afterwards
# and starts a server on that host again.
#
# With CLUSTER_SPREAD=1 (test_cluster_partition_tablet.sh) the masters
# run --spread --balance-by-count (the prober's load on one tablet would
# otherwise have it split and its halves moved: then two servers serve
# the prober's rows at once, rightly, and the check below, which goes by
# server, not by tablet, takes that for an overlap), table t is split at
# p2, p3, x and y, and what is cut off
# is the server of one tablet, [x, y), which the prober asks every server
# for (rows x1-N, x2-N, ...): the master gives that tablet to another
# only once ZooKeeper has expired the old server's session ("tablet N of
# t: NEW serves it (was OLD)"), which 3 checks instead of the whole
# store's hand-over.
set -eu
SESSION_MS=${SESSION_MS:-2000}
SPREAD=${CLUSTER_SPREAD:-}
if [ -n "$SPREAD" ]; then
	MASTER_ARGS="--spread --balance-by-count"
	CLUSTER_SPLITS=p2,p3,x,y
	PROBER_PREFIX=x
fi
. "$(dirname "$0")/netns.sh"

# The host (s1, s2, ...) whose server the cut-off is aimed at: the
# store's, or with SPREAD the one that tablet [x, y) of t is assigned
# to (tabletctl tablets), or nothing.
target() {
	if [ -z "$SPREAD" ]; then
		serving_server
		return
	fi
	tg_addr=$(ctl tablets t 2>/dev/null | awk -F '\t' '$2 == "x" {
		for (i = 1; i <= NF; i++)
			if ($i ~ /^server=/)
				print substr($i, 8)
	}' | sed 's/#.*//')
	for tg in $SERVERS; do
		if [ "$(host_ip "$tg"):7000" = "$tg_addr" ]; then
			echo "$tg"
			return
		fi
	done
}

ROUNDS=${CLUSTER_ROUNDS:-1}
LIMIT=$((SESSION_MS + 5000))
SERVERS="s1 s2 s3"
cluster_up 3
if [ -n "$SPREAD" ]; then
	# The master moves tablets off the root's server to the others.
	t_spread=$(now_ms)
	until tg=$(target) && [ -n "$tg" ] && [ "$tg" != "$(serving_server)" ]
	do
		[ $(( $(now_ms) - t_spread )) -lt $((LIMIT * 2)) ] ||
		    fail "tablet [x, y) of t did not leave the root's server"
		sleep 0.1
	done
fi

writers_start 2
# shellcheck disable=SC2086
prober_start $SERVERS
ready_wait "$(target)"
for round in $(seq "$ROUNDS"); do
	sleep 2
	old=$(target)
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
	# A row of the cut-off server's (of its tablet, with SPREAD).
	until ctl set t "x0-probe-$round" f:q=x 2>>"$T/probe.err"; do
		[ $(( $(now_ms) - t0 )) -lt $((LIMIT * 2)) ] ||
		    fail "round $round: no server took over"
	done
	t_served=$(now_ms)
	new=$(target)
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
	master=$(elected_master)
	if [ -z "$SPREAD" ]; then
		serving=$(log_time "$new" ": serving " "$t0")
		[ -n "$serving" ] || fail "round $round: $new did not log serving"
		handed_what="$new serves the cell"
		handed=$(log_time "$master" \
		    "$(host_ip "$new"):7000 serves the cell" "$t0")
	else
		handed_what="tablet [x, y) of t: $new serves it (was $old)"
		handed=$(log_time "$master" \
		    "of t: $(host_ip "$new"):7000#[0-9]* serves it .was $old_addr#" \
		    "$t0")
	fi
	[ -n "$handed" ] ||
	    fail "round $round: master $master did not log handing to $new"
	# What the master said of the old server meanwhile, if anything.
	asked=$(log_time "$master" "$old_addr does not" "$t0")

	# 1, 2: the old server, seen by the prober (its stamps, its clock).
	awk -F '\t' -v s="$old_addr" -v a="$t0" \
	    '$1 == s && $2 >= a && $4 == "0" { n++; if ($5 > last) last = $5 }
	    END { printf "%d %.0f\n", n, int(last / 1000) }' \
	    "$T/probes" >"$T/old_acks"
	read -r old_after last_stamp <"$T/old_acks"
	[ "$old_after" -gt 0 ] ||
	    fail "round $round: $old acknowledged nothing after the cut:" \
	    "the prober did not reach it"
	# Both in whole milliseconds: the lease ends before its "lease
	# lost" line is written, so a stamp of that same millisecond can
	# still be before the end; one of a later millisecond cannot.
	[ "$last_stamp" -le "$lost" ] ||
	    fail "round $round: $old acknowledged a write stamped" \
	    "$last_stamp, after its lease lost at $lost"
	# The prober's writes to it from the cut on that it answered with
	# an error (its lease had ended), and that got no answer (it had
	# exited).
	refused=$(awk -F '\t' -v s="$old_addr" -v a="$t0" \
	    '$1 == s && $2 >= a && $4 != "0" && $4 != "conn"' "$T/probes" |
	    wc -l)
	unanswered=$(awk -F '\t' -v s="$old_addr" -v a="$t0" \
	    '$1 == s && $2 >= a && $4 == "conn"' "$T/probes" | wc -l)
	# 3: the order of the three processes' own stamps.
	[ -n "$SPREAD" ] || [ "$lost" -lt "$serving" ] ||
	    fail "round $round: $new served at $serving, $old lost its" \
	    "lease only at $lost"
	[ "$lost" -lt "$handed" ] ||
	    fail "round $round: master $master handed the store to $new at" \
	    "$handed, $old lost its lease only at $lost"
	# 4: the prober's view of the handover.
	python3 "$PROBER" overlap "$T/probes" "$old_addr" "$((t0 - 2000))" \
	    >"$T/overlap" || {
		cat "$T/overlap" >&2
		fail "round $round: $old and $new overlap"
	}
	first_new=$(sed -n 's/^new .* stamp \([0-9]*\)$/\1/p' "$T/overlap")
	first_new=$((first_new / 1000))
	[ "$first_new" -gt "$lost" ] ||
	    fail "round $round: $new acknowledged a write stamped $first_new," \
	    "before $old lost its lease at $lost"
	echo "round $round: cut $old off from ZooKeeper at 0 ms" \
	    "($acked0 writes acknowledged before); timeline, each on its" \
	    "own clock:"
	echo "round $round:   +$((last_stamp - t0)) ms $old's last" \
	    "acknowledgement to the prober ($old_after after the cut)"
	echo "round $round:   +$((lost - t0)) ms $old: lease lost (exit 3" \
	    "seen +$((t_exit - t0)) ms; of the prober's writes to it from" \
	    "the cut on, $refused refused, $unanswered unanswered)"
	[ -z "$asked" ] ||
	    echo "round $round:   +$((asked - t0)) ms master $master: $old" \
	    "does not answer"
	[ -n "$SPREAD" ] ||
	    echo "round $round:   +$((serving - t0)) ms $new: serving"
	echo "round $round:   +$((handed - t0)) ms master $master:" \
	    "$handed_what"
	echo "round $round:   +$((first_new - t0)) ms $new's first" \
	    "acknowledgement to the prober"
	echo "round $round:   +$((t_served - t0)) ms a write through the" \
	    "client library went through"
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
