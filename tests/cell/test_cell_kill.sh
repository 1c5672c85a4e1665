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

writer() {
	n=0
	while [ ! -e "$T/stop" ]; do
		n=$((n + 1))
		# Two columns in one mutation: a torn row would show one.
		if ctl set t "w$1-$n" "f:a=v$1-$n" "f:b=v$1-$n" \
		    2>>"$T/writer.err"; then
			printf 'w%s-%s\tv%s-%s\n' "$1" "$n" "$1" "$n" \
			    >>"$T/acked.$1"
		fi
	done
}

reader() {
	while [ ! -e "$T/stop" ]; do
		ctl count t >/dev/null 2>&1 || :
	done
}

for i in 1 2 3 4; do
	: >"$T/acked.$i"
	cell_spawn writer "$i"
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

acked=$(cat "$T"/acked.* | wc -l)
[ "$acked" -gt 0 ] || fail "no write was acknowledged"
# Each acknowledged row with both of its columns.
cat "$T"/acked.* | awk -F '\t' '{ print $1 "\ta\t" $2; print $1 "\tb\t" $2 }' |
    sort >"$T/acked"
ctl export t | awk -F '\t' 'NF == 5 && $2 == "f" { print $1 "\t" $3 "\t" $5 }' |
    sort >"$T/stored"
missing=$(comm -23 "$T/acked" "$T/stored" | wc -l)
if [ "$missing" -ne 0 ]; then
	comm -23 "$T/acked" "$T/stored" | head >&2
	fail "$missing cells of $acked acknowledged writes are lost or torn"
fi
echo "all $acked acknowledged writes read back after $ROUNDS kills"
cell_ok=1
