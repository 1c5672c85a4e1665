#!/bin/sh
# Server stamps across servers whose clocks differ, serving at once
# (DESIGN.md section 1: per cell, server stamps strictly increase; issue
# 28's clock skew).  A cell of two servers serving a table's two tablets
# one by one, one server's clock 30 s ahead (libfaketime).  Proves:
#  - through one client (a FUSE mount of the cell), writes that follow
#    one another are stamped in the order written, though they alternate
#    between the server ahead and the one behind it: each write carries
#    the highest stamp the client has seen, and the server stamps above
#    it (tabletfs.proto, stamp_floor);
#  - the same for one tabletctl import, whose batches go to the two
#    servers in turn (MUTATE_ROWS);
#  - the server ahead does stamp ahead, so the order is not the clocks'.
# What this does not promise: two clients that never see each other's
# stamps get the stamps of the servers' clocks.
set -eu
. "$(dirname "$0")/lib.sh"

cell_mount_needs
cell_faketime_needs
AHEAD_S=30

CELL_START_ARGS="--spread" cell_start 1
cell_server_start_ahead ahead "$AHEAD_S"
ahead_addr=$(sed -n 's/.*listening on \([^,]*\),.*/\1/p' \
    "$C/logs/server-ahead.log" | head -n 1)
[ -n "$ahead_addr" ] || fail "the server ahead logged no address"
ctl createtable t families=f splits=m

cell_wait_servers t 2
# Rows a* are tablet 1's, n* tablet 2's.
if grep -q "^1 $ahead_addr#" "$T/assigned"; then
	ahead_rows=a behind_rows=n
else
	ahead_rows=n behind_rows=a
fi
echo "the server ahead ($ahead_addr) serves the rows $ahead_rows*"

# Through the mount: rows ahead-1, behind-1, ahead-2, ... in turn.
cell_mount "$T/mnt"
i=1
: >"$T/order"
while [ $i -le 20 ]; do
	for side in ahead behind; do
		eval "prefix=\$${side}_rows"
		row=$prefix$(printf '%04d' $i)
		mkdir -p "$T/mnt/t/$row/f/q"
		/bin/echo "m-$side-$i" >"$T/mnt/t/$row/f/q/latest" ||
		    fail "write of $row through the mount"
		echo "m-$side-$i" >>"$T/order"
	done
	i=$((i + 1))
done

# One import of three batches (IMPORT_BATCH_CELLS, 8192 cells), its
# rows alternating between the servers: each batch goes as one
# MUTATE_ROWS to each server, one after the other.
{
	echo '# tabletfs export 2'
	i=1
	while [ $i -le 12000 ]; do
		for side in ahead behind; do
			eval "prefix=\$${side}_rows"
			printf '%sx%05d\tf\tq\t\ti-%s-%d\n' "$prefix" $i \
			    "$side" $i
		done
		i=$((i + 1))
	done
} >"$T/import"
ctl import t "$T/import" >/dev/null || fail "the import"

# export: row, family, qualifier, timestamp, value.
ctl export t >"$T/export"
now_us=$(( $(now_ms) * 1000 ))
max_ahead=$(awk -F '\t' '$5 ~ /^m-ahead-/ && $4 > m { m = $4 }
    END { printf "%.0f\n", m }' "$T/export")
echo "# newest stamp of the server ahead $max_ahead, clock $now_us"
[ "$max_ahead" -gt $((now_us + (AHEAD_S - 10) * 1000000)) ] ||
    fail "the server ahead did not stamp ahead ($max_ahead)"

# Stamps of the writes in the order written ($1: the value's prefix).
in_order() {
	awk -F '\t' -v p="$1" 'index($5, p) == 1 { print $5 "\t" $4 }' \
	    "$T/export" | sort -t - -k 3,3n -k 2,2 | cut -f 2
}
check_order() {
	in_order "$1" >"$T/stamps"
	[ "$(wc -l <"$T/stamps")" -eq "$2" ] ||
	    fail "$(wc -l <"$T/stamps") of the $2 writes $1* read back"
	awk -v what="$3" 'NR > 1 && $1 <= last {
		printf "FAIL: %s: write %d stamped %s, not above %s\n",
		    what, NR, $1, last > "/dev/stderr"
		bad = 1; exit
	} { last = $1 } END { exit bad }' "$T/stamps" ||
	    fail "$3: the stamps do not increase in the order written"
}
check_order m- 40 "through the mount"
# The import: every row of a batch (4096 rows of each side) stamped
# above every row of the batch before, at either server.
awk -F '\t' 'index($5, "i-") == 1 {
	split($5, v, "-"); b = int((v[3] - 1) / 4096); n++
	if (!(b in lo) || $4 < lo[b]) lo[b] = $4
	if (!(b in hi) || $4 > hi[b]) hi[b] = $4
} END {
	if (n != 24000) { printf "FAIL: %d of 24000 rows imported\n", n \
	    > "/dev/stderr"; exit 1 }
	for (b = 1; b in lo; b++)
		if (lo[b] <= hi[b - 1]) {
			printf "FAIL: batch %d has a stamp %.0f not above %.0f " \
			    "of batch %d\n", b, lo[b], hi[b - 1], b - 1 \
			    > "/dev/stderr"
			exit 1
		}
	print "# import: " b " batches, each above the one before"
}' "$T/export" || fail "the import's batches are not stamped in order"
echo "ok: 40 writes through a mount and 24000 rows of an import," \
    "alternating between a server $AHEAD_S s ahead and one behind it," \
    "stamped in the order written"
cell_ok=1
