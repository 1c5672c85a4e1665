#!/bin/sh
# Tablets served one by one (docs/design.md section 5, step 5), on a cell
# started with --spread:
#  - a table of six tablets, made at the root's server, spreads over the
#    three servers (two each, the master moving them with UNLOAD and
#    LOAD) within the session timeout + 5 s (tabletctl tablets names the
#    server of each tablet);
#  - tabletctl status t counts a cell in each of them, whichever
#    server serves it;
#  - under four writers through the client library, kill -9 of a server
#    that is not the root's: the others serve its tablets, recovered
#    from its log, within the session timeout + 5 s, the table answers
#    again, and its directory is removed once no tablet needs its log;
#  - a stopped server's tablets go to others once its session ends, and
#    continued it exits ("lease lost");
#  - every write acknowledged before, during and after reads back, no
#    row torn;
#  - after kill -9 of every process, an embedded open is refused while
#    the servers' logs hold writes, and a cell started again serves
#    every row.
# CELL_ROUNDS sets the kills (1 here; the long form runs 10, each victim
# replaced by a new server).
set -eu
. "$(dirname "$0")/lib.sh"

ROUNDS=${CELL_ROUNDS:-1}
CELL_START_ARGS="--spread" cell_start 3
ctl createtable t families=f splits=w1-5,w2,w2-5,w3,w4


# Wait until no server has more than one tablet above another's among
# the $1 servers named in $2 (a file of names, one a line).
wait_balanced() {
	wb_t0=$(now_ms)
	while :; do
		cell_assignments t >"$T/assigned" 2>/dev/null || :
		if [ "$(wc -l <"$T/assigned")" -eq 6 ] &&
		    ! grep -q ' -$' "$T/assigned"; then
			wb_counts=$(awk '{ print $2 }' "$T/assigned" | sort |
			    uniq -c | awk '{ print $1 }' | sort -n)
			wb_servers=$(echo "$wb_counts" | grep -c .)
			wb_min=$(echo "$wb_counts" | head -n 1)
			wb_max=$(echo "$wb_counts" | tail -n 1)
			[ "$wb_servers" -eq "$1" ] &&
			    [ $((wb_max - wb_min)) -le 1 ] && return 0
		fi
		[ $(( $(now_ms) - wb_t0 )) -lt "$LIMIT" ] || {
			cat "$T/assigned" >&2
			fail "the tablets did not spread over $1 servers"
		}
		sleep 0.1
	done
}

wait_balanced 3
echo "six tablets spread over three servers: $(awk '{ print $2 }' \
    "$T/assigned" | sort | uniq -c | awk '{ print $1 }' | tr '\n' ' ')"

# A table's usage sums every server's tablets, asked by a process that
# has made no call on rows (tabletctl status T): a cell in each tablet.
for r in a-usage w1-6usage w2-2usage w2-6usage w3-usage w4-usage; do
	ctl set t "$r" f:u=x
done
ctl status t >"$T/usage"
grep -q '^table  *t files=[0-9]* disk_bytes=[0-9]* memory_bytes=[0-9]* entries=6 value_bytes=6$' \
    "$T/usage" || { cat "$T/usage" >&2; fail "status t: not the six cells"; }
echo "status t counts the cells of all three servers' tablets"

# Rows in every tablet, two columns a row.
for i in 1 2 3 4; do
	cell_spawn cell_pair_writer "$i"
done

next=4
for round in $(seq "$ROUNDS"); do
	sleep 2
	root=$(cell_serving_pid)
	victim=""
	for f in "$C"/server-*.pid; do
		p=$(cat "$f")
		if [ "$p" != "$root" ] && alive "$p"; then
			victim=$p
			break
		fi
	done
	[ -n "$victim" ] || fail "round $round: no server but the root's"
	address=$(cell_server_address "$victim")
	cell_assignments t >"$T/assigned"
	lost=$(awk -v a="$address#" 'index($2, a) == 1 { print $1 }' \
	    "$T/assigned")
	[ -n "$lost" ] || fail "round $round: $address serves no tablet"
	kill -9 "$victim"
	t0=$(now_ms)
	# Every tablet it had, recovered by another.
	for tablet in $lost; do
		until cell_assignments t 2>/dev/null | awk -v t="$tablet" \
		    -v a="$address#" '$1 == t && $2 != "-" &&
		    index($2, a) != 1 { ok = 1 } END { exit !ok }'; do
			[ $(( $(now_ms) - t0 )) -lt $((LIMIT * 2)) ] ||
			    fail "round $round: tablet $tablet not recovered"
			sleep 0.05
		done
	done
	took=$(( $(now_ms) - t0 ))
	echo "round $round: killed $address; its tablets" $lost \
	    "served by others in $took ms"
	[ "$took" -le "$LIMIT" ] ||
	    fail "round $round: took $took ms, more than $LIMIT"
	until ctl set t "probe-$round" f:a=x f:b=x 2>/dev/null; do
		[ $(( $(now_ms) - t0 )) -lt $((LIMIT * 2)) ] ||
		    fail "round $round: the table does not answer"
	done
	# Its directory goes once no tablet needs its log.
	vdir=$(echo "$address" | tr : _)
	while ls "$C/storage/servers" | grep -q "^$vdir\."; do
		[ $(( $(now_ms) - t0 )) -lt $((LIMIT * 2)) ] ||
		    fail "round $round: servers/$vdir.* is still there"
		sleep 0.1
	done
	cell_server_start "$next"
	next=$((next + 1))
done
# A zombie: a server that serves tablets, not the root's, is stopped;
# once its session ends its tablets are served by others, and continued
# it exits ("lease lost") without answering for them.
sleep 1
root=$(cell_serving_pid)
zombie=""
for f in "$C"/server-*.pid; do
	p=$(cat "$f")
	[ "$p" != "$root" ] && alive "$p" || continue
	zaddr=$(cell_server_address "$p")
	if cell_assignments t | awk -v a="$zaddr#" 'index($2, a) == 1 { f = 1 }
	    END { exit !f }'; then
		zombie=$p
		break
	fi
done
[ -n "$zombie" ] || fail "no server but the root's serves a tablet"
kill -STOP "$zombie"
t0=$(now_ms)
while cell_assignments t 2>/dev/null | awk -v a="$zaddr#" \
    'index($2, a) == 1 { f = 1 } END { exit !f }'; do
	[ $(( $(now_ms) - t0 )) -lt $((LIMIT * 2)) ] ||
	    fail "the stopped server's tablets did not move"
	sleep 0.1
done
echo "stopped $zaddr: its tablets served by others in $(( $(now_ms) - t0 )) ms"
kill -CONT "$zombie"
t0=$(now_ms)
while alive "$zombie"; do
	[ $(( $(now_ms) - t0 )) -lt 5000 ] ||
	    fail "the continued zombie $zombie did not exit"
	sleep 0.05
done
grep -q "server\[$zombie\]: lease lost" "$C"/logs/server-*.log ||
    fail "the zombie $zombie did not log its lease lost"
sleep 1
cell_spawned_stop

acked=$(cell_check_acked_pairs)
echo "all $acked acknowledged writes read back after $ROUNDS kills"

# kill -9 of every process: an embedded open of the storage is refused
# while the servers' logs hold writes, and a cell started again on it
# serves every row it served before.  By row key, not by count: a write
# that a writer gave up on (its outcome unknown) may still be applied
# after the rows were listed, and is then rightly one row more.
ctl export t | awk -F '\t' 'NF > 1 { print $1 }' | sort -u >"$T/rows.before"
rows=$(wc -l <"$T/rows.before")
for f in "$C"/server-*.pid "$C"/master-*.pid; do
	kill -9 "$(cat "$f")" 2>/dev/null || :
done
sleep 0.5
if "$TABLETCTL" -s "$C/storage" count t >/dev/null 2>"$T/embedded.err"; then
	fail "an embedded open ignored the servers' logs"
fi
grep -q "commit logs of a cell's tablet servers" "$T/embedded.err" ||
    fail "embedded open: $(cat "$T/embedded.err")"
cell_master_start 3
for i in 1 2 3; do
	cell_server_start "r$i"
done
t0=$(now_ms)
until ctl export t 2>/dev/null | awk -F '\t' 'NF > 1 { print $1 }' |
    sort -u >"$T/rows.after" &&
    [ -z "$(comm -23 "$T/rows.before" "$T/rows.after")" ]; do
	[ $(( $(now_ms) - t0 )) -lt $((LIMIT * 3)) ] || {
		comm -23 "$T/rows.before" "$T/rows.after" | head >&2
		fail "the cell started again does not serve" \
		    "$(comm -23 "$T/rows.before" "$T/rows.after" | wc -l) of" \
		    "the $rows rows it served before"
	}
	sleep 0.2
done
echo "the cell started again serves all $rows rows in" \
    "$(( $(now_ms) - t0 )) ms ($(comm -13 "$T/rows.before" \
    "$T/rows.after" | wc -l) more, of writes whose outcome was unknown)"
cell_ok=1
