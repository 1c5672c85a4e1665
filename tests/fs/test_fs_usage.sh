#!/bin/sh
# test_fs_usage.sh - per-family accounting through the mount, with the real
# du: TABLE/.schema and tabletctl status T give the same figures, and
# du agrees with them within the bound tabletfs(5) states (ACCOUNTING):
#  - du --apparent-size of every ROW/FAMILY of a family, added up, and of
#    the table, is the family's (table's) value_bytes, exactly, when
#    nothing stored is hidden;
#  - du -B1 (st_blocks) is that plus less than one 512-byte block for
#    each version file;
#  - a version that GC condemned counts in value_bytes until a major
#    compaction drops it, and du never counts it;
#  - before a flush the bytes are in memory_bytes, after a major
#    compaction on disk_bytes, each group's families adding up to its
#    files.
set -eu
. "${top_srcdir:?}/tests/fs/lib.sh"

ctl init
ctl createtable u families=a,b:maxversions=1
ctl createfamily u c group=g2
fs_mount
U=$M/u

# field KIND NAME KEY FILE: KEY's value on the usage line "KIND NAME ..."
# of FILE (.schema's lines, or status's with the first word padded).
field() {
	sed -n "s/^$1  *$2 .*$3=\([0-9]*\).*/\1/p" "$4"
}

# Values of known sizes, random bytes (Snappy cannot shrink them): family
# a 20 rows x 2 columns x 2 versions, b one version in 20 rows, c one in 10.
want_a=0 want_b=0 want_c=0 files_a=0
i=0
while [ $i -lt 20 ]; do
	for q in x y; do
		mkdir -p "$U/r$i/a/$q"
		for ts in 1000 2000; do
			n=$((700 + i * 37 + ts / 100))
			head -c $n /dev/urandom > "$U/r$i/a/$q/$ts"
			want_a=$((want_a + n))
			files_a=$((files_a + 1))
		done
	done
	mkdir -p "$U/r$i/b/q"
	n=$((100 + i * 13))
	head -c $n /dev/urandom > "$U/r$i/b/q/1000"
	want_b=$((want_b + n))
	if [ $i -lt 10 ]; then
		mkdir -p "$U/r$i/c/q"
		n=$((3000 + i))
		head -c $n /dev/urandom > "$U/r$i/c/q/1000"
		want_c=$((want_c + n))
	fi
	i=$((i + 1))
done
want_all=$((want_a + want_b + want_c))
files_all=$(find "$U" -type f | wc -l)
check_eq "version files" "$files_all" $((files_a + 20 + 10))

# The usage lines of .schema and of status T: the same figures.
snap() {
	sed -n '/^$/,$p' "$U/.schema" | sed 1d > "$T/schema.$1"
	ctl status u | sed 's/  */ /' > "$T/status.$1"
	cmp "$T/schema.$1" "$T/status.$1" ||
	    fail "$1: .schema and status differ: $(cat "$T/schema.$1") /" \
	    "$(cat "$T/status.$1")"
	grep -q '^a group=default gc=never$' "$U/.schema" ||
	    fail "$1: .schema lost its family lines: $(cat "$U/.schema")"
}

# du of a family (every ROW/FAMILY added up) and of the table.
du_family() {
	du -s $2 "$U"/*/"$1" | awk '{ n += $1 } END { print n + 0 }'
}
du_table() {
	du -s $1 "$U" | cut -f1
}

# check_du WHAT: du against the value_bytes of $T/schema.WHAT.
check_du() {
	for f in a c; do
		v=$(field family $f value_bytes "$T/schema.$1")
		eval "want=\$want_$f"
		check_eq "$1: $f's value_bytes" "$v" "$want"
		check_eq "$1: du --apparent-size of $f" \
		    "$(du_family $f '--apparent-size -B1')" "$v"
		got=$(du_family $f -B1)
		files=$(find "$U"/*/"$f" -type f | wc -l)
		[ "$got" -ge "$v" ] && [ "$got" -lt $((v + 512 * files)) ] ||
		    fail "$1: du -B1 of $f: $got for $v bytes in $files files"
	done
	v=$(field table u value_bytes "$T/schema.$1")
	check_eq "$1: du --apparent-size of the table" \
	    "$(du_table '--apparent-size -B1')" "$v"
	got=$(du_table -B1)
	[ "$got" -ge "$v" ] && [ "$got" -lt $((v + 512 * files_all)) ] ||
	    fail "$1: du -B1 of the table: $got for $v in $files_all files"
}

# In memory: all of it, none on disk.
snap mem
check_du mem
check_eq "mem: the table's value_bytes" \
    "$(field table u value_bytes "$T/schema.mem")" $want_all
check_eq "mem: disk_bytes" "$(field table u disk_bytes "$T/schema.mem")" 0
[ "$(field family a memory_bytes "$T/schema.mem")" -ge $want_a ] ||
    fail "mem: a's memory_bytes below its values: $(cat "$T/schema.mem")"

# A second version of every b cell: maxversions=1 hides the first from du
# at once, but it is stored (value_bytes) until a major compaction.
i=0
want_b2=0
while [ $i -lt 20 ]; do
	n=$((50 + i))
	head -c $n /dev/urandom > "$U/r$i/b/q/2000"
	want_b2=$((want_b2 + n))
	i=$((i + 1))
done
snap gc
check_eq "gc: b's value_bytes hold both versions" \
    "$(field family b value_bytes "$T/schema.gc")" $((want_b + want_b2))
check_eq "gc: du sees b's newest versions alone" \
    "$(du_family b '--apparent-size -B1')" $want_b2
want_b=$want_b2
want_all=$((want_a + want_b + want_c))

# After a major compaction: on disk, nothing hidden, du exact again.
ctl compact u --major
snap disk
check_du disk
check_eq "disk: b's value_bytes" "$(field family b value_bytes \
    "$T/schema.disk")" $want_b
check_eq "disk: memory_bytes" "$(field table u memory_bytes \
    "$T/schema.disk")" 0
check_eq "disk: du --apparent-size of the table" \
    "$(du_table '--apparent-size -B1')" $want_all
da=$(field family a disk_bytes "$T/schema.disk")
db=$(field family b disk_bytes "$T/schema.disk")
dc=$(field family c disk_bytes "$T/schema.disk")
check_eq "disk: a and b make the default group's files" $((da + db)) \
    "$(field group default disk_bytes "$T/schema.disk")"
check_eq "disk: c makes g2's" "$dc" \
    "$(field group g2 disk_bytes "$T/schema.disk")"
[ "$da" -gt $want_a ] && [ "$da" -lt $((want_a + want_a / 5)) ] ||
    fail "disk: a's disk_bytes $da for $want_a bytes of values"
# Every SSTable of the table is in some group: their sizes add up.
sst=0
for n in $(sed -n 's/.*sstables=\([0-9]*\) bytes=\([0-9]*\).*/\2/p' \
    "$U/.tablets"); do
	sst=$((sst + n))
done
check_eq "disk: the table's disk_bytes are its SSTables'" \
    "$(field table u disk_bytes "$T/schema.disk")" "$sst"
