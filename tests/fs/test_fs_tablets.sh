#!/bin/sh
# test_fs_tablets.sh - TABLE/.tablets: listed beside .schema, one line per
# tablet with escaped bounds ("-" for an empty one, %20 for a space, %2D
# for a key "-"), counts that follow the data (memtable bytes after a
# write, an SSTable after tabletctl compact), and read-only (EROFS).  Also
# GC through the mount: maxversions=2 keeps two versions after a third.
set -eu
. "${top_srcdir:?}/tests/fs/lib.sh"

ctl init
ctl createtable t families=f:maxversions=2 'splits=-,a b,m'
fs_mount

check_eq "listed" "$(ls -a -U "$M/t" | tr '\n' ' ')" ". .. .schema .tablets "
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
