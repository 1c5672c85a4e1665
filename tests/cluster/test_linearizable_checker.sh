#!/bin/sh
# The linearizability checker (tests/cluster/linearizable.py) on
# hand-made histories, so that test_cluster_linearizable.sh is known to
# be able to fail: it must accept the linearizable ones (overlapping
# writes and reads, an unknown write that a later read sees, one that is
# never seen, a failed write, increments) and reject each violation (a
# stale read after a completed write, a read of a value never written,
# an acknowledged write lost under later reads, two acknowledged
# increments returning the same value, a final counter that lost an
# increment, a cas that matched a stale value), keeping the failing
# row's history.  No namespaces: runs everywhere python3 does.
set -eu
: "${top_srcdir:?top_srcdir must be set}"
CHECK=$top_srcdir/tests/cluster/linearizable.py
command -v python3 >/dev/null 2>&1 || { echo "SKIP: no python3"; exit 77; }
T=$(mktemp -d "${TMPDIR:-/tmp}/tabletfs-lin.XXXXXX")
trap 'rm -rf "$T"' EXIT

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

# op CLIENT OP ROW ARGS INVOKE COMPLETE OUTCOME: one history line; ARGS
# are the JSON fields of the op ("value": .., "expected": .., "result":
# ..), times in ns.
op() {
	printf '{"client": %s, "op": "%s", "row": "%s", %s, "invoke": %s,' \
	    "$1" "$2" "$3" "$4" "$5"
	printf ' "complete": %s, "outcome": "%s"}\n' "$6" "$7"
}

# accept NAME [CHECKER ARG...] < HISTORY: the checker must pass it.
accept() {
	ac_name=$1
	shift
	cat >"$T/$ac_name.jsonl"
	python3 "$CHECK" "$@" "$T/$ac_name.jsonl" >"$T/out" 2>&1 || {
		cat "$T/out" >&2
		fail "$ac_name: rejected, but it is linearizable"
	}
	grep -q '^linearizable: ' "$T/out" || fail "$ac_name: no verdict"
	echo "ok: $ac_name accepted"
}

# reject NAME PATTERN [CHECKER ARG...] < HISTORY: the checker must find
# a violation whose line matches PATTERN and keep the history.
reject() {
	rj_name=$1 rj_pat=$2
	shift 2
	cat >"$T/$rj_name.jsonl"
	rm -f "$T/kept"
	if python3 "$CHECK" --keep "$T/kept" "$@" "$T/$rj_name.jsonl" \
	    >"$T/out" 2>&1; then
		cat "$T/out" >&2
		fail "$rj_name: accepted, but it is not linearizable"
	fi
	grep -q "^VIOLATION: .*$rj_pat" "$T/out" || {
		cat "$T/out" >&2
		fail "$rj_name: no violation matching '$rj_pat'"
	}
	[ -s "$T/kept" ] || fail "$rj_name: the failing history was not kept"
	echo "ok: $rj_name rejected ($(grep -m 1 VIOLATION "$T/out"))"
}

# Linearizable.
{
	op 1 put r '"value": "a", "result": null' 10 50 ok
	op 2 put r '"value": "b", "result": null' 20 60 ok
	op 3 read r '"result": "a"' 30 70 ok	# b, then a
	op 3 read r '"result": "a"' 80 90 ok
	op 2 read r '"result": null' 1 5 ok
} | accept overlapping_writes_reads
{
	op 1 put r '"value": "a", "result": null' 10 20 ok
	op 2 put r '"value": "b", "result": null' 30 40 unknown
	op 3 read r '"result": "a"' 50 60 ok	# b not yet applied
	op 3 read r '"result": "b"' 1000 1010 ok
	op 1 read r '"result": "b"' 1020 1030 ok
} | accept unknown_write_seen_later
{
	op 1 put r '"value": "a", "result": null' 10 20 ok
	op 2 put r '"value": "b", "result": null' 30 40 unknown
	op 2 put r '"value": "c", "result": null' 45 48 fail
	op 3 read r '"result": "a"' 50 60 ok
	op 3 read r '"result": "a"' 1000 1010 ok
} | accept unknown_write_never_seen
{
	op 1 put r '"value": "a", "result": null' 10 20 ok
	op 2 cas r '"expected": "a", "value": "b", "result": true' 30 40 ok
	op 3 cas r '"expected": "a", "value": "c", "result": false' 35 45 ok
	op 1 cas r '"expected": "b", "value": "d", "result": null' 50 60 unknown
	op 3 read r '"result": "d"' 70 80 ok
} | accept cas
{
	op 1 incr n '"result": 1' 10 20 ok
	op 2 incr n '"result": 3' 15 40 ok
	op 3 incr n '"result": null' 12 30 unknown
	op 1 read n '"result": "3\n"' 50 60 ok
	op 2 incr n '"result": null' 70 80 unknown
} | accept counter --counter n --final 3

# Violations.
{
	op 1 put r '"value": "a", "result": null' 10 20 ok
	op 2 put r '"value": "b", "result": null' 30 40 ok
	op 3 read r '"result": "a"' 50 60 ok
} | reject stale_read 'row r: not linearizable'
{
	op 1 put r '"value": "a", "result": null' 10 20 ok
	op 3 read r '"result": "z"' 50 60 ok
} | reject read_never_written 'row r: not linearizable'
{
	op 1 put r '"value": "a", "result": null' 10 20 ok
	op 2 put r '"value": "b", "result": null' 30 40 ok
	op 3 read r '"result": "b"' 50 60 ok
	op 3 read r '"result": "a"' 70 80 ok	# b lost, a came back
	op 3 read r '"result": "a"' 90 95 ok
} | reject lost_acked_write 'row r: not linearizable'
{
	op 1 put r '"value": "a", "result": null' 10 20 ok
	op 2 put r '"value": "c", "result": null' 22 24 fail
	op 3 read r '"result": "c"' 50 60 ok	# a failed write applied
} | reject failed_write_seen 'row r: not linearizable'
{
	op 1 incr n '"result": 1' 10 20 ok
	op 2 incr n '"result": 1' 15 25 ok
} | reject doubled_increment 'two acknowledged increments returned 1' \
    --counter n --final 2
{
	op 1 incr n '"result": 1' 10 20 ok
	op 2 incr n '"result": 2' 30 40 ok
} | reject lost_increment 'final counter 1 outside' --counter n --final 1
{
	op 1 incr n '"result": 1' 10 20 ok
	op 2 incr n '"result": 2' 30 40 ok
	op 3 read n '"result": "1\n"' 50 60 ok
} | reject counter_went_back 'row n: not linearizable'
{
	op 1 put r '"value": "a", "result": null' 10 20 ok
	op 2 put r '"value": "b", "result": null' 30 40 ok
	op 3 cas r '"expected": "a", "value": "c", "result": true' 50 60 ok
} | reject cas_matched_stale 'row r: not linearizable'

# Several rows, one bad: the kept history is that row's alone.
{
	op 1 put good '"value": "a", "result": null' 10 20 ok
	op 1 read good '"result": "a"' 30 40 ok
	op 2 put bad '"value": "x", "result": null' 10 20 ok
	op 2 read bad '"result": null' 30 40 ok
} | reject rows_apart 'row bad: not linearizable'
grep -q '"row": "good"' "$T/kept" && fail "rows_apart: kept another row"

# A few thousand ops on one row, five clients overlapping, in seconds.
python3 - "$T/big.jsonl" <<'EOF'
import json, random, sys
rnd = random.Random(7)
value, t, out = None, 0, open(sys.argv[1], "w")
for i in range(3000):
    c = i % 5
    t += 10
    kind = rnd.choice(["put", "read", "cas"])
    op = {"client": c, "op": kind, "row": "r", "invoke": t - 30,
          "complete": t + 30, "outcome": "ok"}
    if kind == "put":
        value = op["value"] = "v%d" % i
        op["result"] = None
    elif kind == "read":
        op["result"] = value
    else:
        op["expected"], op["value"] = value if i % 2 else "nope", "w%d" % i
        op["result"] = op["expected"] == value
        if op["result"]:
            value = op["value"]
    out.write(json.dumps(op) + "\n")
EOF
start=$(date +%s%3N)
python3 "$CHECK" "$T/big.jsonl" >"$T/out" || {
	cat "$T/out" >&2
	fail "big: rejected"
}
echo "ok: 3000 overlapping ops on one row in $(( $(date +%s%3N) - start )) ms"
