#!/bin/sh
# test_cell_rados_limit.sh - a cell on RADOS keeps its files under the
# OSDs' object size limit (issue 27 item 1; docs/rados.md, "The object
# size limit").  The test's Ceph has osd max object size = 8 MiB
# (CEPH_CONF_EXTRA; 128 MiB by default).  Proves:
#  - createtable with a tablet_size over half the limit fails with one
#    line saying the most it takes; a table made without one gets that
#    (4 MiB);
#  - 9 MB of incompressible values written to one table: the commit log
#    is cut at 4 MiB segments, memtables flush at most 4 MiB, the table
#    splits, and after the splits a major compaction writes every
#    SSTable under the limit; every row counts;
#  - one row of 10 MiB, which no split can cut: its major compaction
#    fails cleanly (tabletctl compact exits non-zero saying the file
#    would pass the object limit), nothing is lost and the row reads.
# Skips (77) without Ceph, librados, Java or ZooKeeper, and under
# ThreadSanitizer (test_env_rados.sh says why).
set -eu
. "${top_srcdir:?top_srcdir must be set}/tests/rados/lib.sh"

LIMIT_BYTES=8388608

CEPH_CONF_EXTRA="osd max object size = $LIMIT_BYTES"
export CEPH_CONF_EXTRA
CELL_START_ARGS=--rados
cell_start 1
CONF=$C/ceph/ceph.conf
echo "# cell on $(cat "$C/storage-url") up at $(elapsed) s"

# The largest object under PREFIX, as "SIZE NAME".
largest() {
	rados_c ls | grep "^$1" | while read -r o; do
		rados_c stat "$o" 2>/dev/null | awk -v o="$o" '{ print $NF, o }'
	done | sort -n | tail -n 1
}

# 1. tablet_size.
if ctl createtable big families=f tablet_size=8M 2>"$T/err"; then
	fail "createtable with tablet_size=8M passed"
fi
[ "$(wc -l <"$T/err")" -eq 1 ] && grep -q "at most 4194304 on this storage" \
    "$T/err" || fail "createtable tablet_size=8M: $(cat "$T/err")"
echo "# $(cat "$T/err")"
ctl createtable u families=f

# 2. 9 MB in 12000 rows.
head -c 9000000 /dev/urandom | base64 -w 750 | head -n 12000 |
    awk '{ printf "row%06d\tf\tq\t1000\t%s\n", NR, $0 }' >"$T/u.in"
# The import itself proves the log's cut: with 64 MiB segments its
# segment passed 8 MiB and the import failed (-EFBIG).  Flushed
# segments are gone by now, so the largest seen is a lower bound.
ctl import u "$T/u.in" >/dev/null
log=$(largest cell/log/)
[ "${log%% *}" -le $((LIMIT_BYTES / 2 + (1 << 20))) ] ||
    fail "a log segment of ${log%% *} bytes"
end=$(( $(now_ms) + 30000 ))
until [ "$(ctl tablets u | wc -l)" -ge 3 ]; do
	[ "$(now_ms)" -lt "$end" ] ||
	    fail "u did not split: $(ctl tablets u)"
	sleep 0.5
done
ctl compact --major >/dev/null
sst=$(largest cell/sst/)
[ "${sst%% *}" -lt "$LIMIT_BYTES" ] || fail "an SSTable of ${sst%% *} bytes"
[ "$(ctl count u)" -eq 12000 ] || fail "u counts $(ctl count u) rows"
echo "# 9 MB in u: $(ctl tablets u | wc -l) tablets, largest log segment" \
    "$log, largest SSTable $sst (at $(elapsed) s)"

# 3. One row of 10 MiB.
ctl createtable h families=f:maxversions=100
head -c 8000000 /dev/urandom | base64 -w 1048576 | head -n 10 |
    awk '{ printf "huge\tf\tq\t%d\t%s\n", NR, $0 }' >"$T/h.in"
ctl import h "$T/h.in" >/dev/null
if ctl compact h --major >"$T/out" 2>"$T/err"; then
	fail "the major compaction of a 10 MiB row passed"
fi
echo "# compact of one 10 MiB row: $(cat "$T/err")"
grep -q "past the RADOS object limit of $LIMIT_BYTES" "$T/err" &&
    [ "$(wc -l <"$T/err")" -eq 1 ] || fail "compact h: $(cat "$T/err")"
ctl lookup h huge cells-per-column=100 >"$T/out" 2>"$T/err" ||
    fail "lookup h huge: $(cat "$T/err")"
[ "$(grep -c '^  f:q @' "$T/out")" -eq 10 ] ||
    fail "the huge row lost versions: $(cut -c 1-60 "$T/out")"
# Nothing retries it in the background: the OSD takes (almost) no
# writes while the cell is idle.
osd_w() {
	timeout 20 ceph -c "$CONF" daemon osd.0 perf dump |
	    sed -n 's/^ *"op_w_in_bytes": \([0-9]*\),*$/\1/p'
}
w0=$(osd_w)
sleep 5
w1=$(osd_w)
echo "# then $((w1 - w0)) bytes written to the OSD in 5 s idle"
[ $((w1 - w0)) -lt $((LIMIT_BYTES / 2)) ] ||
    fail "$((w1 - w0)) bytes written in 5 s idle: a compaction retries"
echo "# took $(elapsed) s"
cell_ok=1
