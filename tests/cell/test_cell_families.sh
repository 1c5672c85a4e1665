#!/bin/sh
# Column families made and dropped on a cell whose servers number their
# mutations apart (docs/design.md section 5): each tablet server of a
# cell gives sequence numbers from its own counter, and a family's
# created_seq (the number below which entries belong to an earlier,
# dropped family of its name) comes from the root's server.  On a cell
# of two servers, a table of two tablets, one at each:
#  - a new table reads back what was written to it, whatever the
#    servers' counters (its families have nothing before them);
#  - a family made while the root's server has numbered many more
#    mutations than the other reads back the cells written to it at the
#    other server;
#  - a family dropped and made again while the other server has numbered
#    many more shows none of the dropped family's cells, and the new
#    family's cells read back;
#  - a family dropped while the other server's log holds its cells, then
#    made again once that server is dead (kill -9) but before its tablet
#    is recovered (no master runs): the create waits for the recovery
#    (tablets.recovering, FAMILY_CREATE's servers), and the family made
#    shows none of the dropped family's cells, which the recovery
#    replayed under numbers above every live server's.
set -eu
. "$(dirname "$0")/lib.sh"

CELL_START_ARGS="--spread" cell_start 2
ctl createtable t families=f splits=m

cell_wait_servers t 2

# Rows "$1"0001 ... "$1"N of column $2 (family:qualifier), imported.
rows_import() {
	{
		echo '# tabletfs export 2'
		seq -f "$1%04g" "$3" | awk -v c="$2" '{
			split(c, fq, ":")
			print $0 "\t" fq[1] "\t" fq[2] "\t0\tv-" $0
		}'
	} >"$T/import"
	ctl import t "$T/import"
}

# The number of rows of family $1 in table t.
family_rows() {
	ctl read t "columns=$1" | grep -c '^----$' || :
}

root=$(ctl status | awk '$1 == "serving" { print $2 }')
[ -n "$root" ] || fail "status names no server serving the catalog"
if grep -q "^1 $root#" "$T/assigned"; then
	root_rows=a other_rows=n
else
	root_rows=n other_rows=a
fi
echo "the root's server $root serves the rows $root_rows*"

# A new table: its cells read back at both servers.
rows_import "$root_rows" f:q 20
rows_import "$other_rows" f:q 20
[ "$(family_rows f)" -eq 40 ] || fail "a new table lost cells"

# The root's server numbers 600 mutations more than the other.
rows_import "$root_rows" f:q 600
ctl createfamily t g
rows_import "$other_rows" g:q 30
n=$(family_rows g)
[ "$n" -eq 30 ] || fail "a family made at the root's server shows $n of \
the 30 cells written to it at the other"
ctl lookup t "${other_rows}0007" columns=g:q | grep -q "v-${other_rows}0007" ||
    fail "lookup of a new family's cell at the other server"
echo "a new family's cells read back at the server that did not make it"

# The other server numbers 2000 mutations more than the root's, in g.
rows_import "$other_rows" g:old 2000
[ "$(family_rows g)" -eq 2000 ] || fail "family g does not show its cells"
ctl deletefamily t g
ctl createfamily t g
n=$(family_rows g)
[ "$n" -eq 0 ] || fail "a family dropped and made again shows $n cells \
of the family dropped"
rows_import "$other_rows" g:new 5
rows_import "$root_rows" g:new 5
n=$(family_rows g)
[ "$n" -eq 10 ] || fail "the family made again shows $n of its 10 cells"
echo "a family dropped and made again shows only its own cells"
n=$(family_rows f)
[ "$n" -eq 620 ] || fail "family f shows $n of its 620 rows"

# Family k's cells only in the other server's log, numbered far above
# the root's counter; then k dropped.
ctl createfamily t k
rows_import "$other_rows" k:old 3000
[ "$(family_rows k)" -eq 3000 ] || fail "family k does not show its cells"
ctl deletefamily t k
# No master, so that nothing recovers; then the other server dies.
for f in "$C"/master-*.pid; do
	kill -9 "$(cat "$f")" 2>/dev/null || :
done
other=
for f in "$C"/server-*.pid; do
	p=$(cat "$f")
	if [ "$(cell_server_address "$p")" != "$root" ]; then
		other=$p
		other_address=$(cell_server_address "$p")
	fi
done
[ -n "$other" ] || fail "no server other than the root's"
kill -9 "$other"
t0=$(now_ms)
while ctl status 2>/dev/null | grep -q "^server *$other_address "; do
	[ $(( $(now_ms) - t0 )) -lt "$LIMIT" ] ||
	    fail "the dead server $other_address stays registered"
	sleep 0.1
done
echo "server $other_address killed, its session ended; no master runs"
ctl createfamily t k >"$T/create.out" 2>&1 &
create=$!
sleep 3
alive "$create" || {
	cat "$T/create.out" >&2
	fail "family k was made again while the dead server's log still \
held its cells, before any recovery"
}
cell_master_start 3
wait "$create" || {
	cat "$T/create.out" >&2
	fail "family k was not made once the tablet was recovered"
}
echo "the create waited for the recovery, then made the family"
n=$(family_rows k)
[ "$n" -eq 0 ] || fail "family k made again after a recovery shows $n \
cells of the family dropped"
rows_import "$other_rows" k:new 5
rows_import "$root_rows" k:new 5
n=$(family_rows k)
[ "$n" -eq 10 ] || fail "the family made again shows $n of its 10 cells"
echo "a family made again during a recovery shows only its own cells"
echo "ok"
