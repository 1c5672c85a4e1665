#!/bin/sh
# test_fs_tools.sh - the shell's tools on the mount: cp -a of a column out
# (values and mtimes kept) and of files in, grep -r over a row, du of a
# row (st_blocks follows the size), find over a table, printf of binary
# bytes read back with cmp, and a 3 MiB random value written with cp and
# read back identical.
set -eu
. "${top_srcdir:?}/tests/fs/lib.sh"

fs_webtable
fs_mount -o max_cell=4m

W=$M/webtable
R=$W/org.example
Q=$R/anchor/q
mkdir -p "$Q" "$R/contents/%"
echo one > "$Q/1000000"
echo two > "$Q/2000000"
echo "needle here" > "$Q/3000000"
echo "no match" > "$R/contents/%/5"
echo "a needle too" > "$R/contents/%/6"

# cp -a out: one file per version, the version's time as mtime.
cp -a "$Q" "$T/col"
check_eq "cp -a out" "$(ls "$T/col" | tr '\n' ' ')" "1000000 2000000 3000000 "
check_eq "cp -a value" "$(cat "$T/col/2000000")" "two"
check_eq "cp -a mtime" "$(stat -c %Y "$T/col/3000000")" 3

# cp -a in: a new column made by cp, the same files back.
cp -a "$T/col" "$R/anchor/copy"
diff -r "$T/col" "$R/anchor/copy" || fail "cp -a in differs"
mkdir "$T/more"
echo four > "$T/more/4000000"
echo five > "$T/more/5000000"
cp -a "$T/more/." "$Q/"
check_eq "cp -a into column" "$(ls "$Q" | wc -l)" 5
check_eq "cp -a latest" "$(cat "$Q/latest")" "five"

# grep -r over a row finds the versions holding the pattern.
grep -rl needle "$R" | sed "s|^$R/||" | LC_ALL=C sort > "$T/got"
printf '%s\n' "anchor/copy/3000000" "anchor/q/3000000" "contents/%/6" \
    > "$T/want"
cmp "$T/got" "$T/want" || fail "grep -r: $(cat "$T/got")"

# du: 10000 + 100000 bytes are 20 + 196 blocks of 512, i.e. 108 KiB.
D=$W/du-row/anchor/d
mkdir -p "$D"
head -c 10000 /dev/zero > "$D/1"
head -c 100000 /dev/zero > "$D/2"
check_eq "st_blocks" "$(stat -c %b "$D/2")" 196
check_eq "du -sk row" "$(du -sk "$W/du-row" | cut -f1)" 108
check_eq "du -sb row" "$(du -sb --apparent-size "$W/du-row" | cut -f1)" \
    110000

# find over the table: every version, nothing else (the control files
# are not listed).
(cd "$W" && find . -type f) | LC_ALL=C sort > "$T/got"
cat > "$T/want" <<-END
	./du-row/anchor/d/1
	./du-row/anchor/d/2
	./org.example/anchor/copy/1000000
	./org.example/anchor/copy/2000000
	./org.example/anchor/copy/3000000
	./org.example/anchor/q/1000000
	./org.example/anchor/q/2000000
	./org.example/anchor/q/3000000
	./org.example/anchor/q/4000000
	./org.example/anchor/q/5000000
	./org.example/contents/%/5
	./org.example/contents/%/6
END
cmp "$T/got" "$T/want" || fail "find -type f: $(cat "$T/got")"
check_eq "find -type d" "$(find "$W" -type d | wc -l)" 10

# Binary bytes (NUL, 0xff, CR, no final newline) round-trip.
B=$W/bin/contents/b
mkdir -p "$B"
printf 'a\000b\377\015\012\001z' > "$B/7"
printf 'a\000b\377\015\012\001z' > "$T/bin"
cmp "$B/7" "$T/bin" || fail "binary value differs"
check_eq "binary size" "$(stat -c %s "$B/7")" 8

# A 3 MiB random value through cp, read back identical.
head -c 3145728 /dev/urandom > "$T/big"
cp "$T/big" "$B/latest"
cmp "$B/latest" "$T/big" || fail "3 MiB value differs"
check_eq "3 MiB size" "$(stat -c %s "$B/latest")" 3145728
fs_unmount
fs_mount
cmp "$B/latest" "$T/big" || fail "3 MiB value differs after remount"
