#!/bin/sh
# test_fs_tablets.sh - TABLE/.tablets: beside .schema (neither listed), one line per
# tablet with escaped bounds ("-" for an empty one, %20 for a space, %2D
# for a key "-"), counts that follow the data (memtable bytes after a
# write, an SSTable after tabletctl compact), and read-only (EROFS).  Also
# GC through the mount: maxversions=2 keeps two versions after a third.
set -eu
. "${top_srcdir:?}/tests/fs/lib.sh"

ctl init
ctl createtable t families=f:maxversions=2 'splits=-,a b,m'
fs_mount

# Not listed (so that rm -r, tar and rsync of a table see rows alone), but
# there by name.
check_eq "not listed" "$(ls -a -U "$M/t" | tr '\n' ' ')" ". .. "
[ -f "$M/t/.tablets" ] && [ -f "$M/t/.schema" ] ||
    fail ".tablets and .schema are not there by name"
check_eq "mode" "$(stat -c %a "$M/t/.tablets")" 444
awk '{ print $1, $2 }' "$M/t/.tablets" > "$T/got"
printf '%s\n' "- %2D" "%2D a%20b" "a%20b m" "m -" > "$T/want"
cmp "$T/got" "$T/want" || fail "bounds: $(cat "$M/t/.tablets")"
grep -q '^m - sstables=[0-9]* bytes=[0-9]* memtable=[0-9]*$' \
    "$M/t/.tablets" || fail "fields: $(cat "$M/t/.tablets")"
check_eq "st_size" "$(stat -c %s "$M/t/.tablets")" \
    "$(wc -c < "$M/t/.tablets")"

# A write shows in its tablet's memtable.
mem() {
	grep "^$1 " "$M/t/.tablets" | sed 's/.*memtable=//'
}
before=$(mem m)
mkdir -p "$M/t/zebra/f/q"
head -c 5000 /dev/zero > "$M/t/zebra/f/q/1"
after=$(mem m)
[ "$after" -ge $((before + 5000)) ] ||
    fail "memtable $before -> $after after a 5000-byte write"

# GC: maxversions=2 keeps the two newest of three.
Q=$M/t/zebra/f/q
echo two > "$Q/2"
echo three > "$Q/3"
check_eq "gc ls" "$(ls -U "$Q" | tr '\n' ' ')" "3 2 "
[ ! -e "$Q/1" ] || fail "condemned version 1 still there"
check_eq "gc latest" "$(cat "$Q/latest")" "three"

# Read-only, on a rw mount too.
expect_fail "Read-only" sh -c "echo x > '$M/t/.tablets'"
expect_fail "Read-only" truncate -s 0 "$M/t/.tablets"
expect_fail "Read-only" rm "$M/t/.tablets"

# After a compaction the data is in an SSTable of tablet m.
fs_unmount
ctl compact t --major
fs_mount
grep -q '^m - sstables=1 bytes=[1-9][0-9]* ' "$M/t/.tablets" ||
    fail "after compact: $(cat "$M/t/.tablets")"
check_eq "gc after compact" "$(ls -U "$Q" | tr '\n' ' ')" "3 2 "

# Splits through the mount: a table with a 64 KiB tablet_size, filled by
# shell writes, splits into many tablets while mounted (tabletctl talks to
# the daemon); every row is still listed and read, and all of it survives
# a remount.
ctl createtable big families=f tablet_size=64k
ctl setgroup big default blocksize=2k
i=0
while [ $i -lt 600 ]; do
	mkdir -p "$M/big/row$i/f/q"
	head -c 400 /dev/urandom | od -An -tx1 | tr -d ' \n' \
	    > "$M/big/row$i/f/q/latest"
	i=$((i + 1))
done
ctl compact big
ctl compact big
n=$(wc -l < "$M/big/.tablets")
[ "$n" -ge 4 ] || fail "600 rows of 800 bytes in 64 KiB tablets: $n tablets"
ctl split big row300x
grep -q '^row300x ' "$M/big/.tablets" || fail "forced split not listed"
check_eq "every row listed" "$(ls "$M/big" | wc -l)" 600
check_eq "every row read" "$(cat "$M/big"/row*/f/q/latest | wc -c)" 480000
ls "$M/big" | sort > "$T/rows1"
fs_unmount
ctl tablets big | cut -f 2 > "$T/starts1"
fs_mount
cut -d ' ' -f 1 "$M/big/.tablets" | sed 's/^-$//' > "$T/starts2"
sed 's/^-$//' "$T/starts1" | cmp - "$T/starts2" ||
    fail "tablets differ after remount: $(cat "$M/big/.tablets")"
ls "$M/big" | sort > "$T/rows2"
cmp "$T/rows1" "$T/rows2" || fail "rows differ after remount"
ctl check > "$T/check" || fail "check: $(cat "$T/check")"
