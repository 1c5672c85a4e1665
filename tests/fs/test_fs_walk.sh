#!/bin/sh
# test_fs_walk.sh - a tree walk costs two requests a directory: find(1)
# over 300 rows sends one READDIRPLUS and the empty READDIR that ends it
# for each of its directories, no OPENDIR or RELEASEDIR (the kernel lists
# without opening: opendir answers ENOSYS once) and no LOOKUP of what the
# READDIRPLUS replies carried.  The kernel then keeps each listing in its cache; the
# daemon drops it when a listing shows something else: after a commit
# through the mount, a tabletctl command, or a version that the family's
# maxage condemns as time passes; an idle tree is walked again from the
# cache alone.
set -eu
. "${top_srcdir:?}/tests/fs/lib.sh"

ROWS=300
fs_webtable
awk -v n=$ROWS 'BEGIN { for (i = 0; i < n; i++)
    printf "row%04d\tanchor\tq\t1\tv%d\n", i, i }' > "$T/import"
ctl import webtable "$T/import"
# A cache time longer than the walk, so that no entry it listed expires
# before find reaches it.
"$TABLETFS" -f -d -o cache_timeout=60 "$S" "$M" 2>"$T/requests" &
fs_wait_mounted "$M" || fail "$M not mounted after 5 s"
W=$M/webtable

# The opcodes logged after line $1 of the log, "N OPCODE" each.
since() {
	tail -n +"$(($1 + 1))" "$T/requests" |
	    sed -n 's/.*opcode: \([A-Z_]*\) .*/\1/p' | sort | uniq -c
}

# A first look at the mount settles the kernel's view of the root.
ls "$M" > /dev/null
start=$(wc -l < "$T/requests")
names=$(find "$W" | wc -l)
# The table, and a row, family and column directory and a version a row.
check_eq "names found" "$names" $((1 + ROWS * 4))
dirs=$((1 + ROWS * 3))
since "$start" > "$T/walk"
cat "$T/walk" | sed 's/^/# /' >&2
n() {
	awk -v op="$1" '$2 == op { print $1; found = 1 }
	    END { if (!found) print 0 }' "$T/walk"
}
case $(uname -r) in
[1-4].* | 5.0.*) echo "# kernel $(uname -r) opens every directory" >&2 ;;
*)	check_eq "OPENDIR requests" "$(( $(n OPENDIR) <= 1 ))" 1
	check_eq "RELEASEDIR requests" "$(n RELEASEDIR)" 0 ;;
esac
# The table's 300 rows take a few replies; every other directory one,
# and the empty one that ends it.
listings=$(( $(n READDIRPLUS) + $(n READDIR) ))
[ $listings -ge $((2 * dirs)) ] && [ $listings -le $((2 * dirs + 8)) ] ||
    fail "$listings READDIR(PLUS) requests for $dirs directories"
# Entries carry their attributes, so nothing is looked up, but for the
# rows after the table's first reply: the kernel asks for them plainly
# (its READDIRPLUS_AUTO), fts having read them all before it looks.
table_ino=$(stat -c %i "$W")
tail -n +"$((start + 1))" "$T/requests" |
    sed -n 's/.*opcode: LOOKUP .*nodeid: \([0-9]*\),.*/\1/p' |
    sort -u > "$T/lookups"
[ ! -s "$T/lookups" ] || check_eq "directories looked up in" \
    "$(cat "$T/lookups")" "$table_ino"

# Rule 1: a commit through the mount shows in the column's next listing.
C=$W/row0007/anchor/q
ls "$C" > "$T/before"
echo new > "$C/latest"
ls "$C" > "$T/after"
check_eq "versions after a write" "$(wc -l < "$T/after")" 2
# Rule 2: so does a tabletctl command, at once (within the cache time).
ls "$W/row0008/anchor" > /dev/null
ctl set webtable row0008 anchor:q2=x
check_eq "columns after tabletctl set" "$(ls "$W/row0008/anchor" | wc -l)" 2
ls "$W" > /dev/null
ctl deleterow webtable row0009
ls "$W" | grep -qx row0009 && fail "row0009 listed after deleterow"
# Rule 3: a family whose versions maxage condemns leaves the row's
# listing once the cached one is older than the cache time.
fs_unmount
"$TABLETFS" -f -d -o cache_timeout=1 "$S" "$M" 2>"$T/requests" &
fs_wait_mounted "$M" || fail "$M not mounted after 5 s"
ctl createfamily webtable brief
ctl setgcpolicy webtable brief maxage=3s
# The row's newest version, and so its mtime, lies in the future: the
# kernel cannot tell the listing changed from the mtime.
ctl set webtable row0010 "anchor:q=later@$(( ($(date +%s) + 3600) * 1000000 ))"
mkdir -p "$W/row0010/brief/q"
echo soon-gone > "$W/row0010/brief/q/latest"
check_eq "row0010's families" "$(ls "$W/row0010" | tr '\n' ' ')" "anchor brief "
i=0
while [ "$(ls "$W/row0010")" != anchor ]; do
	i=$((i + 1))
	[ $i -le 100 ] || fail "a condemned family still listed after 10 s"
	sleep 0.1
done

# Elsewhere a listing does not age: walking an idle tree again after the
# cache time sends no READDIR (the kernel revalidates each name and
# lists from its cache).  Three tries, as the kernel may reclaim its
# cache under memory pressure.
awk 'BEGIN { for (i = 0; i < 20; i++) printf "r%02d\tf\tq\t1\tv\n", i }' \
    > "$T/idle"
ctl createtable idle families=f
ctl import idle "$T/idle"
try=1
while :; do
	find "$M/idle" > /dev/null
	sleep 1.5
	start=$(wc -l < "$T/requests")
	check_eq "names in idle" "$(find "$M/idle" | wc -l)" 81
	since "$start" > "$T/walk"
	[ "$(n READDIR)" -ne 0 ] && [ $try -lt 3 ] || break
	try=$((try + 1))
done
check_eq "READDIR requests walking an idle tree again" "$(n READDIR)" 0
check_eq "READDIRPLUS requests walking an idle tree again" \
    "$(n READDIRPLUS)" 0
fs_unmount
