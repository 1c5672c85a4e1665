#!/bin/sh
# A zombie tablet server: the serving server is SIGSTOPped under four
# writers for the session timeout + 3 s, then SIGCONTed.  Proves what
# this slice promises (DESIGN.md section 5; the store's lock is its
# fencing, so no other server can serve while the zombie holds it):
#  - while it is stopped, no other server serves (the lock still names
#    it, no other server logs "serving"), the master's SERVE to the
#    others fails ("does not serve yet"), and no write begun after the
#    stop is acknowledged before the SIGCONT;
#  - once continued it exits with status 3 ("lease lost") instead of
#    answering, another server serves within the session timeout + 5 s,
#    and no write was committed from the stop until the new server took
#    the lock (every version's timestamp is checked against the lock
#    file's mtime): the zombie neither committed nor acknowledged
#    anything after its lease ended;
#  - every acknowledged write reads back.
# Prints the times.  CELL_ROUNDS sets the rounds (1 here; the long form
# runs 5).
set -eu
. "$(dirname "$0")/lib.sh"

ROUNDS=${CELL_ROUNDS:-1}
STOP_MS=$((SESSION_MS + 3000))
GRACE_MS=300	# commits under way when the stop came

# How many times the masters have logged PATTERN.
master_says() {
	cat "$C"/logs/master-*.log | grep -c -- "$1" || :
}

# The server started by scripts/cell gives the store to a child.
cell_start 1
ctl createtable t families=f
first=$(cell_serving_pid)
cell_child_start
cell_child_start
cell_child_start
kill -TERM "$first"
t0=$(now_ms)
until ctl set t probe-0 f:q=x 2>/dev/null && [ "$(cell_serving_pid)" != "$first" ]; do
	[ $(( $(now_ms) - t0 )) -lt $((LIMIT * 2)) ] ||
	    fail "no child server took over the store"
	sleep 0.1
done

for i in 1 2 3 4; do
	cell_spawn cell_writer "$i"
done

for round in $(seq "$ROUNDS"); do
	sleep 1
	z=$(cell_serving_pid)
	case " $cell_children " in
	*" $z "*) ;;
	*) fail "round $round: the store's holder $z is not a child" ;;
	esac
	refused=$(master_says "does not serve yet")
	servings=$(cat "$C"/logs/server-*.log | grep -c ": serving " || :)
	kill -STOP "$z"
	stop_us=$(date +%s%6N)
	t0=$(now_ms)
	while [ $(( $(now_ms) - t0 )) -lt "$STOP_MS" ]; do
		[ "$(cell_serving_pid)" = "$z" ] ||
		    fail "round $round: the lock moved from the stopped $z"
		[ "$(cat "$C"/logs/server-*.log | grep -c ": serving ")" = \
		    "$servings" ] ||
		    fail "round $round: another server serves beside $z"
		sleep 0.1
	done
	[ "$(master_says "does not serve yet")" -gt "$refused" ] ||
	    fail "round $round: the master tried no other server meanwhile"

	kill -CONT "$z"
	t1=$(now_ms)
	while alive "$z"; do
		[ $(( $(now_ms) - t1 )) -lt "$LIMIT" ] ||
		    fail "round $round: the zombie $z still runs"
		sleep 0.01
	done
	took_exit=$(( $(now_ms) - t1 ))
	status=0
	wait "$z" || status=$?
	[ "$status" -eq 3 ] ||
	    fail "round $round: the zombie $z exited with $status, not 3"
	grep -q "server\[$z\]: lease lost" "$C"/logs/server-c*.log ||
	    fail "round $round: the zombie $z did not log its lease lost"
	until ctl set t "probe-$round" f:q=x 2>>"$T/probe.err"; do
		[ $(( $(now_ms) - t1 )) -lt $((LIMIT * 2)) ] ||
		    fail "round $round: no server took over"
	done
	took=$(( $(now_ms) - t1 ))
	new=$(cell_serving_pid)
	[ -n "$new" ] && [ "$new" != "$z" ] ||
	    fail "round $round: the store is not served by another server"
	# A write begun after the stop can only be acknowledged by a server
	# that serves after it: none may have been before the SIGCONT.
	early=$(cat "$T"/acked.* | awk -F '\t' -v s="$t0" -v c="$t1" \
	    '$4 > s && $3 < c' | wc -l)
	[ "$early" -eq 0 ] ||
	    fail "round $round: $early writes begun after the stop were" \
	    "acknowledged while the server was stopped"
	lock_us=$(date -r "$C/storage/LOCK" +%s%6N)
	# No version stamped from the stop until the new server's lock.
	ctl export t | awk -F '\t' -v a=$((stop_us + GRACE_MS * 1000)) \
	    -v b="$lock_us" 'NF == 5 && $4 > a && $4 < b' >"$T/zombie"
	if [ -s "$T/zombie" ]; then
		head "$T/zombie" >&2
		fail "round $round: $(wc -l <"$T/zombie") writes committed" \
		    "between the stop and the new server's lock"
	fi
	echo "round $round: stopped $z for $STOP_MS ms: $(cell_acked_count)" \
	    "acknowledged, none begun meanwhile; after SIGCONT it exited (3)" \
	    "in $took_exit ms;" \
	    "served again in $took ms"
	[ "$took" -le "$LIMIT" ] ||
	    fail "round $round: took $took ms, more than $LIMIT"
	cell_child_start
done
cell_spawned_stop
n=$(cell_check_acked)
echo "all $n acknowledged writes read back after $ROUNDS zombies"
cell_ok=1
