#!/bin/sh
# test_crash.sh - kill -9 of the daemon under concurrent writers, round
# after round, on one store (docs/design.md section 4, Durability).
#
# Each round mounts the store and starts three writers through the mount
# (cat into version files, which reports close(); two write exact
# timestamps, one of them with a memtable small enough to flush and
# compact while it runs, and all three add server-stamped versions to
# `latest`, on rows and columns that they share) and one through
# tabletctl over the control socket (`set T ROW g:a=X g:b=X`, one atomic
# row mutation of two cells, with server and exact stamps), and one that
# sets four such rows in one batch (`set T b0 ... -- b1 ...`, one
# bt_mutate_rows call: each row all or nothing).  Every writer
# logs a write before it tries it and again once it is acknowledged.  At
# a random moment the daemon is killed with SIGKILL; the dead mount is
# detached and the store remounted; then, from an export of the table
# over the socket and reads through the mount:
#   - every acknowledged write is there with its exact value, and its
#     exact timestamp where the writer chose it (0 lost);
#   - every cell there is one that some writer tried, whole (no torn or
#     unknown value);
#   - both cells of every tabletctl mutation are there, or neither, with
#     one timestamp (row atomicity);
#   - tabletctl check is clean.
#
#   test_crash.sh [--long] [ROUNDS]   50 rounds (--long: 500; 15 under
#                                     TEST_SMALL, as scripts/check runs
#                                     it under the sanitizers)
#   TEST_SEED=N test_crash.sh         replay the rounds of seed N
# The kill delays and value sizes come from the seed, printed first; the
# interleaving of the writers does not, so a replay is close, not exact.
set -eu
. "${top_srcdir:?}/tests/fs/lib.sh"

rounds=50
[ -z "${TEST_SMALL:-}" ] || rounds=15
if [ "${1:-}" = "--long" ]; then
	rounds=500
	shift
fi
[ $# -gt 0 ] && rounds=$1
seed=${TEST_SEED:-$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}
echo "# seed $seed (rerun: TEST_SEED=$seed), $rounds rounds"

ctl init
ctl createtable t families=f,g
NW=3		# writers through the mount
ROWS="r0 r1 r2"
QUALS="q0 q1 q2"

# rnd ROUND SALT MAX: a number in [0, MAX) from the seed.
rnd() {
	awk -v s="$seed" -v r="$1" -v t="$2" -v m="$3" \
	    'BEGIN { srand(s * 7919 + r * 104729 + t); print int(rand() * m) }'
}

# writer_mount W ROUND: writes through the mount until one fails.
# Version files get exact stamps; every third write goes to latest.
writer_mount() {
	w=$1 round=$2
	mix=$(rnd "$round" "$w" 1000)
	log=$T/w$w
	i=0
	while [ ! -e "$T/stop" ]; do
		i=$((i + 1))
		set -- $ROWS
		shift $(( (i + w) % 3 ))
		row=$1
		set -- $QUALS
		shift $(( (i / 3 + w) % 3 ))
		q=$1
		len=$(( (i * 131 + mix) % 3000 ))
		v=$(printf 'w%d.r%d.i%d.%0*dE' "$w" "$round" "$i" "$len" 0)
		if [ $((i % 3)) -eq 0 ]; then
			name=latest ts='*'
		else
			ts=$((1000000000000 + round * 10000000 + w * 1000000 + i))
			name=$ts
		fi
		printf '%s\tf\t%s\t%s\t%s\n' "$row" "$q" "$ts" "$v" \
		    >>"$log.try"
		if printf '%s' "$v" | cat 2>/dev/null \
		    >"$M/t/$row/f/$q/$name"; then
			printf '%s\tf\t%s\t%s\t%s\n' "$row" "$q" "$ts" "$v" \
			    >>"$log.ack"
		else
			break
		fi
	done
}

# writer_ctl ROUND: two-cell row mutations through tabletctl.
writer_ctl() {
	round=$1
	log=$T/wc
	i=0
	while [ ! -e "$T/stop" ]; do
		i=$((i + 1))
		row=c$((i % 4))
		v="c.r$round.i$i"
		if [ $((i % 2)) -eq 0 ]; then
			ts='*' at=
		else
			ts=$((2000000000000 + round * 10000000 + i))
			at=@$ts
		fi
		printf '%s\t%s\t%s\n' "$row" "$ts" "$v" >>"$log.try"
		if ctl set t "$row" "g:a=$v$at" "g:b=$v$at" >/dev/null \
		    2>&1; then
			printf '%s\t%s\t%s\n' "$row" "$ts" "$v" >>"$log.ack"
		fi
	done
}

# writer_batch ROUND: batches of four two-cell rows through tabletctl
# (set with rows separated by --, one bt_mutate_rows call, one log
# append): each row is logged as writer_ctl logs its row.
writer_batch() {
	round=$1
	log=$T/wb
	i=0
	while [ ! -e "$T/stop" ]; do
		i=$((i + 1))
		if [ $((i % 2)) -eq 0 ]; then
			ts='*' at=
		else
			ts=$((3000000000000 + round * 10000000 + i))
			at=@$ts
		fi
		set --
		for r in 0 1 2 3; do
			v="b.r$round.i$i.$r"
			printf 'b%d\t%s\t%s\n' "$r" "$ts" "$v" >>"$log.try"
			[ $# -eq 0 ] || set -- "$@" --
			set -- "$@" "b$r" "g:a=$v$at" "g:b=$v$at"
		done
		if ctl set t "$@" >/dev/null 2>&1; then
			for r in 0 1 2 3; do
				printf 'b%d\t%s\t%s\n' "$r" "$ts" \
				    "b.r$round.i$i.$r" >>"$log.ack"
			done
		fi
	done
}

# The table as export prints it, over the socket of the mounted store.
export_table() {
	ctl export t >"$T/cells" || fail "export failed"
}

# Compare the export with the writers' logs (all rounds so far).
verify() {
	cat "$T"/w[0-9].try >"$T/try.f" 2>/dev/null || : >"$T/try.f"
	cat "$T"/w[0-9].ack >"$T/ack.f" 2>/dev/null || : >"$T/ack.f"
	cat "$T"/w[cb].try >"$T/try.c" 2>/dev/null || : >"$T/try.c"
	cat "$T"/w[cb].ack >"$T/ack.c" 2>/dev/null || : >"$T/ack.c"
	awk -F '\t' -v try_f="$T/try.f" -v ack_f="$T/ack.f" \
	    -v try_c="$T/try.c" -v ack_c="$T/ack.c" '
	BEGIN {
		while ((getline l < try_f) > 0) {
			split(l, a, "\t")
			tried[a[1] "\t" a[3] "\t" a[4] "\t" a[5]] = 1
		}
		while ((getline l < try_c) > 0) {
			split(l, a, "\t")
			ctried[a[1] "\t" a[2] "\t" a[3]] = 1
		}
	}
	# The export: its version line, then row, family, qualifier, ts,
	# value (the rows and qualifiers here need no escapes).
	NR == 1 && $0 == "# tabletfs export 2" { next }
	$2 == "f" {
		k = $1 "\t" $3 "\t" $4 "\t" $5
		ks = $1 "\t" $3 "\t*\t" $5
		if (!(k in tried) && !(ks in tried)) {
			print "unknown or torn cell: " $0; bad++
		}
		have[k] = 1; have[ks] = 1
		next
	}
	$2 == "g" {
		if ($3 != "a" && $3 != "b") {
			print "unknown column: " $0; bad++
			next
		}
		if (!(($1 "\t" $4 "\t" $5) in ctried) &&
		    !(($1 "\t*\t" $5) in ctried)) {
			print "unknown or torn cell: " $0; bad++
		}
		cell[$1 "\t" $3 "\t" $5] = $4
		next
	}
	{ print "unknown family: " $0; bad++ }
	END {
		while ((getline l < ack_f) > 0) {
			split(l, a, "\t")
			if (!((a[1] "\t" a[3] "\t" a[4] "\t" a[5]) in have)) {
				print "acknowledged write lost: " l; lost++
			}
		}
		while ((getline l < ack_c) > 0) {
			split(l, a, "\t")
			ka = a[1] "\ta\t" a[3]
			if (!(ka in cell) ||
			    (a[2] != "*" && cell[ka] != a[2])) {
				print "acknowledged set lost: " l; lost++
			}
		}
		# Row atomicity: g:a and g:b hold the same values at the
		# same stamps.
		for (k in cell) {
			split(k, a, "\t")
			o = a[1] "\t" (a[2] == "a" ? "b" : "a") "\t" a[3]
			if (!(o in cell) || cell[o] != cell[k]) {
				print "half a row mutation: " k; bad++
			}
		}
		printf "lost=%d bad=%d\n", lost, bad
		exit (lost + bad > 0)
	}' "$T/cells" >"$T/verdict" || {
		head -20 "$T/verdict" | cut -c1-200 >&2
		fail "round $round: verification failed (seed $seed)"
	}
}

# Reads through the mount agree: the last acknowledged exact writes.
verify_mount_reads() {
	for w in $(seq 1 $NW); do
		[ -s "$T/w$w.ack" ] || continue
		grep -v "	\*	" "$T/w$w.ack" | tail -3 |
		while IFS="$(printf '\t')" read -r row fam q ts v; do
			got=$(cat "$M/t/$row/$fam/$q/$ts") ||
			    fail "round $round: cannot read $row/$fam/$q/$ts"
			[ "$got" = "$v" ] ||
			    fail "round $round: $row/$fam/$q/$ts reads wrong"
		done
	done
}

acked_total=0
round=1
while [ $round -le $rounds ]; do
	# Every third round with a tiny memtable: flushes and compactions
	# run while the writers write and when the kill comes.
	if [ $((round % 3)) -eq 0 ]; then
		fs_mount -o memtable_size=16k
	else
		fs_mount
	fi
	for row in $ROWS; do
		for q in $QUALS; do
			mkdir -p "$M/t/$row/f/$q"
		done
	done
	rm -f "$T/stop"
	before=$(cat "$T"/w*.ack 2>/dev/null | wc -l)
	pids=""
	for w in $(seq 1 $NW); do
		writer_mount "$w" "$round" &
		pids="$pids $!"
	done
	writer_ctl "$round" &
	pids="$pids $!"
	writer_batch "$round" &
	pids="$pids $!"
	# Once the round's first write is acknowledged (slow builds take a
	# while), wait 0 to 0.9 s more.
	i=0
	while [ "$(cat "$T"/w*.ack 2>/dev/null | wc -l)" -le "$before" ]; do
		i=$((i + 1))
		[ $i -le 500 ] || fail "round $round: no write acknowledged in 10 s"
		sleep 0.02
	done
	delay=$(rnd "$round" 99 900)
	sleep "$(awk -v d="$delay" 'BEGIN { printf "%.3f", d / 1000 }')"
	pid=$(fs_daemon_pid)
	[ -n "$pid" ] || fail "round $round: no daemon"
	kill -9 "$pid"
	touch "$T/stop"
	for p in $pids; do
		wait "$p" || :
	done
	fusermount3 -u "$M" 2>/dev/null || umount -l "$M"
	fs_wait_daemon

	fs_mount
	export_table
	verify
	verify_mount_reads
	ctl check >"$T/check.out" 2>&1 ||
	    { cat "$T/check.out" >&2; fail "round $round: check not clean"; }
	fs_unmount
	round=$((round + 1))
done
acked=$(cat "$T"/w*.ack | wc -l)
tried=$(cat "$T"/w*.try | wc -l)
cells=$(wc -l <"$T/cells")
echo "# $rounds rounds survived: $acked writes acknowledged of $tried" \
    "tried, $cells cells, 0 acknowledged writes lost (seed $seed)"
