#!/bin/sh
# test_tabletctl_bulk.sh - the real `tabletctl import --bulk` on a store:
# a file of cells in random order, with a header, repeats and an empty
# timestamp, loaded into a table split in three tablets and two groups
# reads back as a plain import of the same file reads (export compared
# byte for byte), a loaded cell over an older delete is visible, one
# SSTable per tablet and group is added, and check is clean; bad input
# (a malformed line, an unknown family, a value's bad escape, a name
# that is not a valid spelling, a missing file) is one line naming the
# file and line, exit 1, and the store byte for byte as it was; a store
# locked by another process and a mounted store (its command over the
# control socket; skipped without FUSE) are refused with one line; a load
# killed with SIGKILL at several points leaves every cell or none, and
# the next open removes what it left in tmp/ and sst/.  Every check
# compares exact stdout, stderr and exit status.
set -eu

: "${top_builddir:?top_builddir is not set}"
ctl="$top_builddir/src/ctl/tabletctl"
tabletfs="$top_builddir/src/fs/tabletfs"
[ -x "$ctl" ] || { echo "test_tabletctl_bulk: $ctl is not built" >&2; exit 1; }

tmp=$(mktemp -d)
holder=
mounted=
loader=
cleanup() {
	for p in $holder $loader; do
		kill -9 "$p" 2>/dev/null || true
	done
	if [ -n "$mounted" ]; then
		fusermount3 -u "$mounted" 2>/dev/null ||
		    umount -l "$mounted" 2>/dev/null || true
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' HUP INT TERM

store="$tmp/store"
checks=0
failures=0

. "$(dirname "$0")/check.sh"

tc() {
	"$ctl" -s "$store" "$@"
}

# The store's files and the table's cells, to compare before and after
# a refused load.
snapshot() {
	(cd "$store" && find sst tmp -type f | sort && tc export t) \
	    >"$tmp/$1"
}

tc init
tc createtable t families=a,b splits=r0100,r0200
tc setgroup t g2
tc createfamily t c group=g2
tc createtable m families=a,b,c
# Before the load, in both tables: a version the load replaces and a
# column it writes under a delete.
for tb in t m; do
	tc set "$tb" r0050 a:x=before@7
	tc set "$tb" r0060 a:x=old@3
	tc deletecolumn "$tb" r0060 a x
done

# 300 rows, three cells each, in a shuffled order, a version 2 header,
# each row's a:x given twice (the later wins), an escaped value.
{
	echo '# tabletfs export 2'
	seq 0 299 | awk '{ srand($1 * 7 + 1); printf "%06d r%04d\n", int(rand() * 1000000), $1 }' |
	    sort | while read -r _ r; do
		printf '%s\ta\tx\t7\tfirst %s\n' "$r" "$r"
		printf '%s\tc\t%%\t9\tline\\x0aof %s\n' "$r" "$r"
		printf '%s\ta\tx\t7\tsecond %s\n' "$r" "$r"
		printf '%s\tb\tq%%2Fslash\t1\t\n' "$r"
	done
} >"$tmp/cells.tsv"
check "import --bulk" 0 '' '' tc import --bulk t "$tmp/cells.tsv"
check "plain import of the same cells into the model" 0 '' '' \
    tc import m "$tmp/cells.tsv"
tc export t | tail -n +2 >"$tmp/t.out"
tc export m | tail -n +2 >"$tmp/m.out"
check "the load reads back as the plain import" 0 '' '' \
    cmp "$tmp/t.out" "$tmp/m.out"
check "every row" 0 300 '' tc count t
check "the later of two cells of one version wins" 0 \
'----
r0150
  a:x @ 7
    "second r0150"
  b:q%2Fslash @ 1
    ""
  c:% @ 9
    "line\x0aof r0150"' '' tc lookup t r0150
check "a loaded cell over an older delete is visible" 0 \
'----
r0060
  a:x @ 7
    "second r0060"' '' tc lookup t r0060 columns=a
# Both groups' files in every tablet (test_api_bulk counts them exactly;
# here a background merge may have taken older files meanwhile).
check "SSTables of both groups in every tablet" 0 \
't	-	r0100	yes
t	r0100	r0200	yes
t	r0200	-	yes' '' sh -c '"$1" -s "$2" tablets t | sed "s/	sstables=\([0-9]*\).*/	\1/" |
	awk -F"\t" "{ print \$1 \"\t\" \$2 \"\t\" \$3 \"\t\" (\$4 >= 2 ? \"yes\" : \$4) }"' \
    sh "$ctl" "$store"
check "check is clean" 0 OK '' sh -c '"$1" -s "$2" check | sed "s/.*: //"' \
    sh "$ctl" "$store"
check "nothing left in tmp/" 0 '' '' ls "$store/tmp"

# An empty timestamp: the load's one stamp, the same for every such cell.
printf 's1\ta\tq\t\tone\ns2\ta\tq\t\ttwo\n' >"$tmp/stamp.tsv"
check "cells without a timestamp" 0 '' '' tc import --bulk t "$tmp/stamp.tsv"
s1=$(tc lookup t s1 | sed -n 's/.*@ //p')
s2=$(tc lookup t s2 | sed -n 's/.*@ //p')
checks=$((checks + 1))
if [ -n "$s1" ] && [ "$s1" = "$s2" ] && [ "$s1" -gt 1700000000000000 ]; then
	echo "ok $checks - one server stamp for the load ($s1)"
else
	failures=$((failures + 1))
	echo "not ok $checks - one server stamp for the load ('$s1' '$s2')"
fi

# Bad input: one line naming the file and line, exit 1, nothing changed.
snapshot before
printf 'n1\ta\tq\t1\tv\nn2\ta\tq\n' >"$tmp/bad1"
check "a malformed line" 1 '' \
    "tabletctl: import: $tmp/bad1:2: bad line (want ROW, FAMILY, QUALIFIER, TIMESTAMP, VALUE separated by tabs); nothing imported" \
    tc import --bulk t "$tmp/bad1"
printf 'n1\ta\tq\t1\tv\nn2\tnofam\tq\t1\tv\n' >"$tmp/bad2"
check "an unknown family" 1 '' \
    "tabletctl: import: $tmp/bad2:2: table t: no family nofam (No such file or directory)" \
    tc import --bulk t "$tmp/bad2"
printf 'n1\ta\tq\t1\tv\\q\n' >"$tmp/bad3"
check "a value's bad escape" 1 '' \
    "tabletctl: import: $tmp/bad3:1: bad line (want ROW, FAMILY, QUALIFIER, TIMESTAMP, VALUE separated by tabs); nothing imported" \
    tc import --bulk t "$tmp/bad3"
printf '# tabletfs export 2\nn%%zz\ta\tq\t1\tv\n' >"$tmp/bad4"
check "a row that is not a valid spelling" 1 '' \
    "tabletctl: import: $tmp/bad4:2: bad line (want ROW, FAMILY, QUALIFIER, TIMESTAMP, VALUE separated by tabs); nothing imported" \
    tc import --bulk t "$tmp/bad4"
printf 'n1\ta\tq\t-3\tv\n' >"$tmp/bad5"
check "a negative timestamp" 1 '' \
    "tabletctl: import: $tmp/bad5:1: bad line (want ROW, FAMILY, QUALIFIER, TIMESTAMP, VALUE separated by tabs); nothing imported" \
    tc import --bulk t "$tmp/bad5"
check "a missing file" 1 '' \
    "tabletctl: import: $tmp/missing: No such file or directory" \
    tc import --bulk t "$tmp/missing"
check "an unknown table" 1 '' \
    "tabletctl: import: table nosuch: no such table (No such file or directory)" \
    tc import --bulk nosuch "$tmp/cells.tsv"
check "--bulk twice is a usage error" 2 '' \
"tabletctl: import: unexpected '--bulk'
usage: tabletctl [-s STORE] import [--bulk] T FILE" \
    tc import --bulk t --bulk
snapshot after
check "refused loads change nothing" 0 '' '' cmp "$tmp/before" "$tmp/after"

# A store another process holds: a load waits 5 s as every verb does,
# then is refused naming the holder.
mkfifo "$tmp/fifo"
"$ctl" -s "$store" import m "$tmp/fifo" &
holder=$!
tries=0
while [ "$(cat "$store/LOCK" 2>/dev/null)" != "$holder" ]; do
	tries=$((tries + 1))
	[ "$tries" -le 100 ] || { echo "the holder never locked" >&2; exit 1; }
	sleep 0.1
done
check "a store held by another process is refused" 1 '' \
    "tabletctl: import: $store/LOCK: held by pid $holder (Resource temporarily unavailable)" \
    tc import --bulk t "$tmp/stamp.tsv"
: >"$tmp/fifo"
wait "$holder"
holder=

# A mounted store: the command reaches the daemon, which refuses it.
mnt="$tmp/mnt"
mkdir "$mnt"
if [ -c /dev/fuse ] && command -v fusermount3 >/dev/null 2>&1 &&
    [ -x "$tabletfs" ] && "$tabletfs" "$store" "$mnt" 2>"$tmp/mount.err"; then
	mounted=$mnt
	i=0
	while ! mountpoint -q "$mnt"; do
		i=$((i + 1))
		[ $i -le 50 ] || { echo "not mounted" >&2; exit 1; }
		sleep 0.1
	done
	check "a mounted store is refused" 1 '' \
	    "tabletctl: import: --bulk: $store is mounted: a bulk load needs the store to itself (unmount it, or import without --bulk)" \
	    tc import --bulk t "$tmp/stamp.tsv"
	check "a mounted store is refused, stdin too" 1 '' \
	    "tabletctl: import: --bulk: $store is mounted: a bulk load needs the store to itself (unmount it, or import without --bulk)" \
	    sh -c '"$1" -s "$2" import --bulk t - <"$3"' sh "$ctl" "$store" \
	    "$tmp/stamp.tsv"
	fusermount3 -u "$mnt"
	mounted=
	i=0
	while [ -e "$store/tabletfs.sock" ] || ! flock -n "$store/LOCK" true; do
		i=$((i + 1))
		[ $i -le 300 ] || { echo "the daemon stays" >&2; exit 1; }
		sleep 0.1
	done
else
	checks=$((checks + 1))
	echo "ok $checks - a mounted store is refused # SKIP cannot mount FUSE"
fi

# SIGKILL in the middle of loads of 200000 rows (26 MB), each of rows of
# its own: all of a load or none.
base=$(tc count t)
for delay in 0.1 0.4 0.8 1.6; do
	seq 1 200000 | awk -v p="$delay" '{ printf "k%s-%06d\ta\tq\t5\t%0120d\n", p, ($1 * 7919) % 200000, $1 }' \
	    >"$tmp/kill.tsv"
	"$ctl" -s "$store" import --bulk t "$tmp/kill.tsv" &
	loader=$!
	sleep "$delay"
	kill -9 "$loader" 2>/dev/null || true
	wait "$loader" 2>/dev/null || true
	loader=
	# A writable open sweeps what the killed load left.
	tc compact t
	n=$(tc count t)
	checks=$((checks + 1))
	if [ "$n" -eq "$base" ] || [ "$n" -eq $((base + 200000)) ]; then
		echo "ok $checks - killed after ${delay}s: $((n - base)) of 200000 rows"
	else
		failures=$((failures + 1))
		echo "not ok $checks - killed after ${delay}s: $((n - base)) of 200000 rows"
	fi
	check "killed after ${delay}s: check is clean, tmp/ empty" 0 'OK' '' \
	    sh -c '"$1" -s "$2" check | sed "s/.*: //"; ls "$2/tmp"' \
	    sh "$ctl" "$store"
	base=$n
done

echo "$checks checks, $failures failed"
[ "$failures" -eq 0 ]
