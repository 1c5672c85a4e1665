#!/bin/sh
# Issue 26's kill test on a cell whose tablets are spread (scripts/cell
# start --spread, a 2 s session): a table split into tablets on every
# server, four writers and two readers through the client library
# (tabletctl processes, two columns a row) and four writers and two
# readers through a FUSE mount of the cell (/bin/echo into version
# files), all at once.  Each round kills -9 a random live tablet server
# (the root's included: the root then moves), forces splits before and
# during the recovery, and starts a new server, so the cell stays at
# three.  Proves:
#  - every tablet of the table is served by a live server again (tabletctl
#    tablets names it, and a scan of the whole table answers) within the
#    session timeout + 5 s of each kill (twice that in make check's one
#    round: below);
#  - a split forced while a server is dead completes;
#  - a read of an acknowledged row never gives another value;
#  - at the end every acknowledged write reads back through tabletctl and
#    through the mount, no row of two columns is torn, and the mount is
#    still mounted.
# Prints the seed (CELL_SEED reruns the same victims and split rows) and
# the recovery time of each round.  CELL_ROUNDS sets the rounds: 1 here
# (each round adds tablets, and the rounds add minutes); the long form
# is CELL_ROUNDS=20.
# Skips (77) without /dev/fuse or the right to mount.
set -eu
. "$(dirname "$0")/lib.sh"

cell_mount_needs

ROUNDS=${CELL_ROUNDS:-1}
# make check runs two tests at a time on two cores beside this one's own
# ten clients, and stretches ZooKeeper's expiry of the victim's session:
# its one round (5.7 s in a CI run, 3.5-5.1 s otherwise) is held to
# twice the bound, which still fails a recovery that hangs or waits a
# round too many.  The long form, run by hand (CELL_ROUNDS set), holds
# every round to the issue's bound, LIMIT.
if [ -z "${CELL_ROUNDS:-}" ]; then
	BOUND=$((LIMIT * 2))
else
	BOUND=$LIMIT
fi
SEED=${CELL_SEED:-$(( $(date +%s) % 100000 ))}
echo "seed $SEED: rerun with CELL_SEED=$SEED CELL_ROUNDS=$ROUNDS"
M=$T/mnt

# A number in [0, $1) drawn from the seed and the tag $2.
random() {
	awk -v n="$1" -v s="$SEED" -v tag="$2" 'BEGIN {
		h = s
		chars = "0123456789abcdefghijklmnopqrstuvwxyz-"
		for (i = 1; i <= length(tag); i++) {
			h = h * 31 + index(chars, substr(tag, i, 1))
			h %= 2147483647
		}
		srand(h)
		print int(rand() * n)
	}'
}

CELL_START_ARGS="--spread" cell_start 3
# Rows m1-N... (the mount's writers) sort before w1-N... (tabletctl's).
ctl createtable t families=f splits=m3,w2,w4
for row in m2 m4 w1-5 w2-5 w3 w3-5; do
	ctl split t "$row" || fail "split t $row"
done
cell_mount "$M"

# The server each tablet of t is assigned to, as tabletctl tablets says:
# "START SERVER" a line, "-" for a tablet without one; false, printing
# nothing, when tabletctl tablets fails (its output may then be partial).
assignments() {
	ctl tablets t >"$T/tablets" || return 1
	awk -F '\t' '{
		s = "-"
		for (i = 1; i <= NF; i++)
			if ($i ~ /^server=/)
				s = substr($i, 8)
		print $2, s
	}' "$T/tablets"
}

# The pids of the live tablet servers, one a line: those of their pid
# files that still run the server that wrote them (the pid of a server
# killed rounds ago may be another process's by now, which must be
# neither killed nor counted).
live_servers() {
	for f in "$C"/server-*.pid; do
		ls_p=$(cat "$f" 2>/dev/null) || continue
		if alive "$ls_p" && tr '\0' ' ' <"/proc/$ls_p/cmdline" \
		    2>/dev/null | grep -q -F -- "server $CELL " &&
		    tr '\0' ' ' <"/proc/$ls_p/cmdline" 2>/dev/null |
		    grep -q -F -- "--pidfile $f "; then
			echo "$ls_p"
		fi
	done
}

# The names ("HOST:PORT#EPOCH") the live servers serve under now, one a
# line, from the last "serving ... as NAME" each logged (a server that
# becomes the root's takes a new name: its tablets are then given out
# again).
live_names() {
	for p in $(live_servers); do
		ln_re="^tabletd server\\[$p\\]: serving .* as \\([^,]*\\),.*"
		sed -n "s/$ln_re/\\1/p" "$C"/logs/server-*.log | tail -n 1
	done
}

# Wait until each of the live servers serves two tablets of t or more
# (the master balances them), for at most LIMIT ms.
wait_spread() {
	ws_t0=$(now_ms)
	while :; do
		ws_ok=1
		assignments >"$T/assigned" 2>/dev/null || ws_ok=0
		for p in $(live_servers); do
			a=$(cell_server_address "$p")
			awk -v a="$a#" 'index($2, a) == 1 { f++ }
			    END { exit f < 2 }' "$T/assigned" || ws_ok=0
		done
		[ "$ws_ok" = 0 ] || return 0
		[ $(( $(now_ms) - ws_t0 )) -lt "$LIMIT" ] || {
			cat "$T/assigned" >&2
			fail "the tablets did not spread over the live servers"
		}
		sleep 0.1
	done
}

wait_spread
echo "$(wc -l <"$T/assigned") tablets over the servers:" \
    "$(awk '{ print $2 }' "$T/assigned" | sort | uniq -c |
    awk '{ print $1 }' | tr '\n' ' ')"

# Four writers through the client library, two columns a row
# (cell_pair_writer: $T/acked.N).
for i in 1 2 3 4; do
	cell_spawn cell_pair_writer "$i"
done

# A reader through the client library: scans the table, and looks up
# the latest acknowledged row of a writer, which must hold its value in
# both columns when the lookup answers.
ctl_reader() {
	while [ ! -e "$T/stop" ]; do
		ctl count t >/dev/null 2>&1 || :
		line=$(tail -n 1 "$T/acked.$1" 2>/dev/null) || :
		[ -n "$line" ] || continue
		row=${line%%	*}
		value=${line#*	}
		if got=$(ctl lookup t "$row" columns=f:a,f:b 2>/dev/null); then
			n=$(echo "$got" | grep -c -F -- "$value") || :
			[ "$n" = 2 ] || {
				echo "lookup $row: want $value twice," \
				    "got: $got" >>"$T/bad"
			}
		fi
	done
}

# Writers through the mount (as tests/cell/test_cell_mount.sh): rows
# mN-1, mN-2, ..., each acknowledged one in $T/macked.N with its value
# as tabletctl export spells it.
mount_writer() {
	n=0
	: >"$T/macked.$1"
	while [ ! -e "$T/stop" ]; do
		n=$((n + 1))
		row=m$1-$n
		if mkdir -p "$M/t/$row/f/q" 2>>"$T/mwriter.err" &&
		    /bin/echo "v$1-$n" >"$M/t/$row/f/q/latest" \
		    2>>"$T/mwriter.err"; then
			printf '%s\tv%s-%s\\x0a\n' "$row" "$1" "$n" \
			    >>"$T/macked.$1"
		fi
	done
}

# A reader through the mount: lists the table, and reads the latest
# acknowledged row of a mount writer and of a tabletctl writer, which
# must hold their values when the read answers.
mount_reader() {
	while [ ! -e "$T/stop" ]; do
		ls "$M/t" >/dev/null 2>&1 || :
		line=$(tail -n 1 "$T/macked.$1" 2>/dev/null) || :
		if [ -n "$line" ] && got=$(cat "$M/t/${line%%	*}/f/q/latest" \
		    2>/dev/null); then
			want=${line#*	}
			[ "$got" = "${want%\\x0a}" ] ||
			    echo "mount ${line%%	*}: '$got'" >>"$T/bad"
		fi
		line=$(tail -n 1 "$T/acked.$1" 2>/dev/null) || :
		if [ -n "$line" ] && got=$(cat "$M/t/${line%%	*}/f/b/latest" \
		    2>/dev/null); then
			[ "$got" = "${line#*	}" ] ||
			    echo "mount ${line%%	*}: '$got'" >>"$T/bad"
		fi
	done
}

for i in 1 2 3 4; do
	cell_spawn mount_writer "$i"
done
for i in 1 2; do
	cell_spawn ctl_reader "$i"
	cell_spawn mount_reader "$i"
done

# A split of t at a row in the midst of a writer's rows, drawn from tag
# $1: the row of writer N (of either kind) halfway through what it has
# written, a boundary that exists already is fine (nothing to do).
split_row() {
	sr_w=$(( $(random 4 "$1w") + 1 ))
	if [ "$(random 2 "$1k")" = 0 ]; then
		sr_n=$(wc -l <"$T/acked.$sr_w")
		echo "w$sr_w-$(( sr_n / 2 + 1 + $2 ))"
	else
		sr_n=$(wc -l <"$T/macked.$sr_w")
		echo "m$sr_w-$(( sr_n / 2 + 1 + $2 ))"
	fi
}

# Split t at split_row $1 (its detail into $2), or at the next row of
# that writer when a tablet already starts there (a split made before,
# by force or by size): 0, or the failed split's status.  Sets split_at.
force_split() {
	fs_k=0
	while :; do
		split_at=$(split_row "$1" "$fs_k")
		ctl split t "$split_at" 2>"$2" && return 0
		grep -q "File exists" "$2" && [ "$fs_k" -lt 8 ] || return 1
		fs_k=$((fs_k + 1))
	done
}

next=4
times=""
for round in $(seq "$ROUNDS"); do
	sleep 2
	wait_spread
	# A split before the kill, at whichever server holds the row.
	force_split "$round-a" "$T/split.err" ||
	    fail "round $round: split t $split_at: $(cat "$T/split.err")"
	set -- $(live_servers)
	[ $# -ge 2 ] || fail "round $round: only $# live servers"
	pick=$(( $(random $# "$round-v") + 1 ))
	victim=$(eval echo "\${$pick}")
	address=$(cell_server_address "$victim")
	role=server
	[ "$victim" != "$(cell_serving_pid)" ] || role=root
	lost=$(awk -v a="$address#" 'index($2, a) == 1' "$T/assigned" | wc -l)
	before=$(cell_acked_count)
	kill -9 "$victim"
	t0=$(now_ms)
	for f in "$C"/server-*.pid; do
		[ "$(cat "$f")" != "$victim" ] || rm -f "$f"
	done
	# A split while the victim's tablets are being recovered: it must
	# complete once they are served.
	(
		force_split "$round-b" "$T/split.err"
		echo "$? $split_at" >"$T/split.rc"
	) &
	splitter=$!
	# Served again: every tablet of t assigned to a live server's
	# current name (the catalog says so at $assigned ms), and then a
	# scan of the whole table answers.
	assigned=""
	while :; do
		if [ -z "$assigned" ] &&
		    assignments >"$T/assigned" 2>/dev/null &&
		    [ -s "$T/assigned" ] && live_names >"$T/names" &&
		    awk 'NR == FNR { live[$1] = 1; next }
		    !($2 in live) { f = 1 } END { exit f }' \
		    "$T/names" "$T/assigned"; then
			assigned=$(( $(now_ms) - t0 ))
		fi
		if [ -n "$assigned" ] && ctl count t >/dev/null 2>&1; then
			break
		fi
		[ $(( $(now_ms) - t0 )) -lt $((LIMIT * 3)) ] || {
			cat "$T/assigned" >&2
			fail "round $round: $address's tablets not served" \
			    "again after $(( $(now_ms) - t0 )) ms"
		}
		sleep 0.05
	done
	took=$(( $(now_ms) - t0 ))
	times="$times $took"
	echo "round $round: killed $role $address ($lost tablets of t)" \
	    "after $before writes; reassigned in $assigned ms, served" \
	    "again in $took ms"
	[ "$took" -le "$BOUND" ] ||
	    fail "round $round: took $took ms, more than $BOUND"
	mountpoint -q "$M" || fail "round $round: $M was unmounted"
	wait "$splitter" || :
	read -r split_rc split_at <"$T/split.rc"
	[ "$split_rc" = 0 ] ||
	    fail "round $round: split t $split_at during recovery:" \
	    "$(cat "$T/split.err")"
	cell_server_start "$next"
	next=$((next + 1))
done
sleep 1
cell_spawned_stop
mountpoint -q "$M" || fail "$M was unmounted"
if [ -s "$T/bad" ]; then
	head "$T/bad" >&2
	fail "$(wc -l <"$T/bad") reads gave another value than acknowledged"
fi

# Through tabletctl: the pairs (cell_check_acked_pairs), then the
# mount's rows.
pairs=$(cell_check_acked_pairs)
cat "$T"/macked.* | sort >"$T/macked"
mn=$(wc -l <"$T/macked")
[ "$mn" -gt 0 ] || fail "no write through the mount was acknowledged"
ctl export t | awk -F '\t' 'NF == 5 && $3 == "q" { print $1 "\t" $5 }' |
    sort >"$T/mstored"
missing=$(comm -23 "$T/macked" "$T/mstored" | wc -l)
if [ "$missing" -ne 0 ]; then
	comm -23 "$T/macked" "$T/mstored" | head >&2
	fail "$missing of $mn writes through the mount are lost"
fi

# Through the mount: every acknowledged cell of both kinds.
bad=0
while IFS="$(printf '\t')" read -r row value; do
	for q in a b; do
		got=
		IFS= read -r got <"$M/t/$row/f/$q/latest" 2>/dev/null || :
		if [ "$got" != "$value" ]; then
			echo "$row f:$q: through the mount '$got', want '$value'" >&2
			bad=$((bad + 1))
		fi
	done
done <"$(cat "$T"/acked.* >"$T/pairs" && echo "$T/pairs")"
while IFS="$(printf '\t')" read -r row value; do
	got=
	IFS= read -r got <"$M/t/$row/f/q/latest" 2>/dev/null || :
	if [ "$got" != "${value%\\x0a}" ]; then
		echo "$row f:q: through the mount '$got', want '$value'" >&2
		bad=$((bad + 1))
	fi
done <"$T/macked"
[ "$bad" -eq 0 ] ||
    fail "$bad acknowledged cells do not read back through the mount"
mountpoint -q "$M" || fail "$M was unmounted"
echo "all $pairs pairs through tabletctl and $mn writes through the" \
    "mount read back through both after $ROUNDS kills, none torn;" \
    "$(assignments | wc -l) tablets"
echo "recovery times (ms):$times"
fusermount3 -u "$M" || fail "unmount failed"
cell_ok=1
