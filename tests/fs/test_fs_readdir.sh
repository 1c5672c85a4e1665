#!/bin/sh
# test_fs_readdir.sh - a table's listing streams from a scan: 20000 rows
# listed exactly once each and in key order, with ls -f and
# readdirplus-driven ls -l; seekdir goes back and forth within a listing;
# rows added while a listing runs appear at most once and no old row is
# lost; pending (mkdir'd) rows merge into place.
set -eu
. "${top_srcdir:?}/tests/fs/lib.sh"

N=20000
fs_webtable
awk -v n=$N 'BEGIN { for (i = 0; i < n; i++)
    printf "row%06d\tanchor\tq\t1\tv%d\n", i, i }' > "$T/import"
ctl import webtable "$T/import"
awk -v n=$N 'BEGIN { for (i = 0; i < n; i++) printf "row%06d\n", i }' \
    > "$T/want"
fs_mount

W=$M/webtable
# seekdir within a listing not yet cached by the kernel (so that each
# seek is a READDIR at that offset): from a telldir cookie of each of the
# first 12000 entries, read 700 entries (the one reply the seek brings),
# go back 100 of them (within what the daemon remembers, behind the
# reply it may have built ahead) and read on; back 800 entries before
# the seek (where the history's slots may have been taken by the rows of
# the reply built ahead), then far back, and ahead.
# Every entry must be the one listed there the first time, and from the
# last seek on the listing must hold every later row once, in order.
perl -e '
	my ($dir, $want) = @ARGV;
	opendir(my $d, $dir) or die "opendir $dir: $!\n";
	my (@pos, @name);
	for (my $i = 0; $i < 12000; $i++) {
		push @pos, telldir($d);
		my $e = readdir($d);
		defined $e or die "listing ended at $i\n";
		push @name, $e;
	}
	sub from {
		my ($i, $n) = @_;
		seekdir($d, $pos[$i]);
		for (my $j = $i; $j < $i + $n; $j++) {
			my $e = readdir($d);
			$e eq $name[$j] or die "seekdir to $i, entry $j: " .
			    "$e, not $name[$j]\n";
		}
	}
	for my $i (9000, 11000, 3000, 1600, 7001) {
		from($i, 700);
		from($i + 600, 400);
		from($i, 700);
		from($i - 800, 10);
	}
	seekdir($d, $pos[5000]);
	my @rest;
	while (defined(my $e = readdir($d))) {
		push @rest, $e;
	}
	open(my $w, "<", $want) or die "$want: $!\n";
	my @all = map { chomp; $_ } <$w>;
	my ($first) = grep { $all[$_] eq $name[5000] } 0 .. $#all;
	join(" ", @rest) eq join(" ", @all[$first .. $#all]) or
	    die "from entry 5000: " . @rest . " rows, not " .
	    (@all - $first) . "\n";
' "$W" "$T/want" || fail "seekdir in a listing"
ls -f "$W" | grep -v '^\.' > "$T/got"
cmp "$T/got" "$T/want" || fail "ls -f: $(wc -l < "$T/got") rows"
check_eq "ls -l" "$(ls -l "$W" | grep -c '^d')" $N

# Pending rows merge into key order.
mkdir "$W/row010000x" "$W/a-first"
ls -U "$W" > "$T/got"
check_eq "first" "$(head -n 1 "$T/got")" "a-first"
grep -n -x -e row010000 -e row010000x -e row010001 "$T/got" | cut -d: -f2 |
    tr '\n' ' ' > "$T/order"
check_eq "merged" "$(cat "$T/order")" "row010000 row010000x row010001 "
rmdir "$W/row010000x" "$W/a-first"

# Rows added during a listing: each row at most once, no old row lost.
(
	i=0
	while [ $i -lt 200 ]; do
		mkdir -p "$W/row0$i-new/anchor/q"
		echo x > "$W/row0$i-new/anchor/q/latest"
		i=$((i + 1))
	done
) &
writer=$!
ls -f "$W" | grep -v '^\.' > "$T/got"
wait $writer
sort "$T/got" | uniq -d > "$T/dups"
[ ! -s "$T/dups" ] || fail "listed twice: $(head "$T/dups")"
grep -v -- -new "$T/got" > "$T/old"
cmp "$T/old" "$T/want" || fail "lost rows during additions"

# The kernel's readdir cache: an unchanged directory is listed again
# without a READDIR request (a long cache timeout, so no listing can age
# out here), and every change that a listing shows makes the next one
# read afresh: a pending row made and dropped, a commit through the
# mount, one through tabletctl, a pending qualifier in a family.
fs_unmount
"$TABLETFS" -f -d -o cache_timeout=60 "$S" "$M" 2>"$T/requests" &
fs_wait_mounted "$M" || fail "$M not mounted after 5 s"
readdirs() {
	grep -c 'opcode: READDIR' "$T/requests" || :
}
# listed_again WHAT DIR: DIR listed a second time from the cache.  The
# kernel may reclaim its cache pages or the directory's inode under
# memory pressure (it did once in CI, under ThreadSanitizer), so each
# pair gets three tries; a daemon that never lets the kernel keep its
# cache fails all three.
listed_again() {
	try=1
	while :; do
		ls -f "$2" > "$T/first"
		before=$(readdirs)
		ls -f "$2" > "$T/again"
		asked=$(($(readdirs) - before))
		[ $asked -ne 0 ] && [ $try -lt 3 ] || break
		echo "# $1: the second listing asked $asked READDIRs" \
		    "(try $try)" >&2
		try=$((try + 1))
	done
	check_eq "$1: READDIRs of a second listing" $asked 0
	cmp "$T/first" "$T/again" || fail "$1: the cached listing differs"
}
# listed WHAT DIR NAME: NAME is in the listing of DIR, or with "!" not.
# The whole listing is read: the kernel caches only listings read to
# their end.
listed() {
	ls -f "$2" > "$T/listing"
	if [ "$3" = "!" ]; then
		! grep -q -x -e "$4" "$T/listing" || fail "$1: $4 still listed"
	else
		grep -q -x -e "$3" "$T/listing" || fail "$1: $3 not listed"
	fi
}
listed_again "table" "$W"
mkdir "$W/row010000y"
listed "pending row" "$W" row010000y
listed_again "table with a pending row" "$W"
rmdir "$W/row010000y"
listed "dropped pending row" "$W" ! row010000y
mkdir -p "$W/row0-via-mount/anchor/q"
echo x > "$W/row0-via-mount/anchor/q/latest"
listed "row written through the mount" "$W" row0-via-mount
ctl set webtable row0-via-ctl anchor:q=y
listed "row written by tabletctl" "$W" row0-via-ctl
ctl deleterow webtable row0-via-ctl
listed "row deleted by tabletctl" "$W" ! row0-via-ctl
F=$W/row000001/anchor
listed_again "family" "$F"
mkdir "$F/q2"
listed "pending qualifier" "$F" q2
rm "$W/row0-via-mount/anchor/q/"[0-9]*
rmdir "$W/row0-via-mount/anchor/q" "$W/row0-via-mount/anchor" \
    "$W/row0-via-mount"
listed "row deleted through the mount" "$W" ! row0-via-mount

# Many pending directories (their index grows several times): 300 rows
# of a family and a column each; every third is dropped, every third
# settled by a write, and each row must then be listed, looked up and
# left pending exactly as that says; at unmount the pending ones go.

i=0
while [ $i -lt 300 ]; do
	mkdir -p "$W/pend$i/anchor/q"
	i=$((i + 1))
done
: > "$T/want-pend"
: > "$T/want-kept"
i=0
while [ $i -lt 300 ]; do
	case $((i % 3)) in
	0)	rmdir "$W/pend$i/anchor/q" "$W/pend$i/anchor" "$W/pend$i"
		[ ! -e "$W/pend$i" ] || fail "pend$i still there after rmdir" ;;
	1)	echo "v$i" > "$W/pend$i/anchor/q/latest"
		echo "pend$i" >> "$T/want-pend"
		echo "pend$i" >> "$T/want-kept" ;;
	2)	echo "pend$i" >> "$T/want-pend" ;;
	esac
	i=$((i + 1))
done
ls -f "$W" | grep '^pend' | sort > "$T/got-pend"
sort "$T/want-pend" | cmp - "$T/got-pend" || fail "pending rows listed wrong"
i=2
while [ $i -lt 300 ]; do
	[ -d "$W/pend$i/anchor/q" ] || fail "pend$i/anchor/q lost"
	check_eq "pend$i/anchor" "$(ls "$W/pend$i/anchor")" q
	i=$((i + 3))
done
check_eq "pend298 settled" "$(cat "$W/pend298/anchor/q/latest")" v298
fs_unmount
fs_mount
ls -f "$W" | grep '^pend' | sort > "$T/got-pend"
sort "$T/want-kept" | cmp - "$T/got-pend" || fail "rows kept at remount"
