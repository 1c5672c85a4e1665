#!/bin/sh
# test_fs_shell.sh - what shells and everyday programs do to files, run for
# real on a mount (tabletfs(5), "Writing"):
#   - one open makes one version: { a; b; c; } > latest, exec 3>, in bash
#     and dash; tee -a, truncate and dd;
#   - >> appends on the server: two shells appending lose no line;
#   - errors that shells would miss at close() come from write(): an
#     increment of a non-number (EINVAL), an overflow (ERANGE), a version
#     that the GC policy condemns at once (EINVAL at open);
#   - latest reads back what was written to it, even after a version with
#     a future timestamp;
#   - mmap of a version, tail -f of latest;
#   - with -o allow_other, another user can read every file and write none.
set -eu
. "${top_srcdir:?}/tests/fs/lib.sh"

ctl init
ctl createtable t families=b,one:maxversions=1,old:maxage=1d
fs_mount
R=$M/t/r
mkdir -p "$R/b"

count() {
	ls "$1" | grep -c '^[1-9][0-9]*$' || :
}

# One open, one version, however many processes share the descriptor.
for sh in bash dash; do
	command -v $sh >/dev/null 2>&1 || continue
	Q=$R/b/group-$sh
	mkdir -p "$Q"
	$sh -c "{ /bin/echo one; /bin/echo two; /bin/echo three; } > '$Q/latest'"
	check_eq "$sh { } >: versions" "$(count "$Q")" 1
	check_eq "$sh { } >: value" "$(cat "$Q/latest")" "one
two
three"
	$sh -c "exec 3> '$Q/latest'; echo four >&3; /bin/echo five >&3;
	    exec 3>&-"
	check_eq "$sh exec 3>: versions" "$(count "$Q")" 2
	check_eq "$sh exec 3>: value" "$(cat "$Q/latest")" "four
five"
done

Q=$R/b/tools
mkdir -p "$Q"
echo a | tee "$Q/latest" >/dev/null
echo b | tee -a "$Q/latest" >/dev/null
check_eq "tee -a" "$(cat "$Q/latest")" "a
b"
truncate -s 1 "$Q/latest"
check_eq "truncate" "$(cat "$Q/latest")" "a"
printf 'xyz' | dd of="$Q/latest" bs=1 seek=1 conv=notrunc 2>/dev/null
check_eq "dd conv=notrunc" "$(cat "$Q/latest")" "axyz"
check_eq "tools: one version each" "$(count "$Q")" 4

# Two shells appending 300 lines each: every line lands.
Q=$R/b/log
mkdir -p "$Q"
for who in a b; do
	(
		i=0
		while [ $i -lt 300 ]; do
			echo "$who $i" >> "$Q/latest"
			i=$((i + 1))
		done
	) &
done
wait
check_eq "appended lines" "$(wc -l < "$Q/latest")" 600
check_eq "lines of a" "$(grep -c '^a ' "$Q/latest")" 300
check_eq "lines of b" "$(grep -c '^b ' "$Q/latest")" 300

# Increments: errors at write(), where the shell sees them.
N=$R/b/n
mkdir -p "$N"
echo 5 > "$N/increment"
{ echo 1; echo 2; } > "$N/increment"
check_eq "increments" "$(cat "$N/latest")" 8
echo text > "$N/latest"
expect_fail "Invalid argument" sh -c "/bin/echo 5 > '$N/increment'"
echo 9223372036854775807 > "$N/latest"
expect_fail "out of range" sh -c "/bin/echo 1 > '$N/increment'"
check_eq "nothing added" "$(cat "$N/latest")" 9223372036854775807

# latest reads back what was written to it, even after a future version.
F=$R/b/future
mkdir -p "$F"
echo future > "$F/8000000000000000"
echo now > "$F/latest"
check_eq "latest after a future version" "$(cat "$F/latest")" now
echo more >> "$F/latest"
check_eq ">> after a future version" "$(cat "$F/latest")" "now
more"
echo 1 > "$F/increment" 2>/dev/null || :
check_eq "future version kept" "$(cat "$F/8000000000000000")" future

# A version condemned the moment it is written fails at open.
mkdir -p "$R/one/q" "$R/old/q"
echo new > "$R/one/q/latest"
expect_fail "Invalid argument" sh -c "echo old > '$R/one/q/100'"
check_eq "maxversions=1 kept" "$(cat "$R/one/q/latest")" new
expect_fail "Invalid argument" sh -c "echo old > '$R/old/q/100'"
echo recent > "$R/old/q/latest"
check_eq "maxage: a recent write" "$(cat "$R/old/q/latest")" recent

# maxversions counts the versions that are not deleted, and a version
# once condemned stays condemned.
mkdir -p "$R/one/d"
echo a > "$R/one/d/100"
echo b > "$R/one/d/200"
check_eq "maxversions=1: the newest" "$(ls "$R/one/d")" 200
rm "$R/one/d/200"
check_eq "maxversions=1: what 200 condemned stays condemned" \
    "$(ls "$R/one/d" 2>/dev/null)" ""
mkdir -p "$R/one/d"
echo c > "$R/one/d/150"
check_eq "maxversions=1: a deleted version costs no place" \
    "$(ls "$R/one/d")" 150
check_eq "maxversions=1: its value" "$(cat "$R/one/d/latest")" c

# A directory's mtime is the time of its newest version: find -newer
# finds where a write went.
mkdir -p "$M/t/m1/b/old" "$M/t/m1/b/new" "$M/t/m2/b/q"
echo x > "$M/t/m1/b/old/latest"
echo x > "$M/t/m2/b/q/latest"
sleep 1.1
touch "$T/ref"
sleep 0.1
echo y > "$M/t/m1/b/new/latest"
check_eq "find -newer" "$(cd "$M/t" && find m1 m2 -newer "$T/ref" -type d |
    LC_ALL=C sort | tr '\n' ' ')" "m1 m1/b m1/b/new "

# mmap of a version and of latest; a second read of a version is served
# from the page cache.
Q=$R/b/mm
mkdir -p "$Q"
printf 'mapped value' > "$Q/latest"
V=$(ls "$Q" | head -n 1)
python3 - "$Q/$V" "$Q/latest" <<'END'
import mmap, sys
for p in sys.argv[1:]:
    with open(p, "rb") as f:
        m = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)
        assert m[:] == b"mapped value", (p, m[:])
        m.close()
END

# tail -f of latest follows what is appended.
Q=$R/b/tail
mkdir -p "$Q"
echo first > "$Q/latest"
tail -f "$Q/latest" > "$T/tail.out" &
tail_pid=$!
sleep 1
echo second >> "$Q/latest"
i=0
until grep -q second "$T/tail.out" || [ $i -ge 50 ]; do
	sleep 0.1
	i=$((i + 1))
done
kill $tail_pid 2>/dev/null || :
wait $tail_pid 2>/dev/null || :
check_eq "tail -f" "$(cat "$T/tail.out")" "first
second"
fs_unmount

# Another user, with allow_other: reads everything, writes nothing.
if [ "$(id -u)" -eq 0 ] && command -v runuser >/dev/null 2>&1 &&
    id nobody >/dev/null 2>&1; then
	chmod 755 "$T"
	fs_mount -o allow_other
	mkdir -p "$R/b/perm"
	echo keep > "$R/b/perm/latest"
	as() { runuser -u nobody -- sh -c "$1"; }
	as "cat '$R/b/perm/latest' >/dev/null" ||
	    fail "another user cannot read"
	for f in latest increment 5 tmpname; do
		if as "echo 9 > '$R/b/perm/$f'" 2>/dev/null; then
			fail "another user wrote $f"
		fi
	done
	as "mv '$R/b/perm/latest' '$R/b/perm/x'" 2>/dev/null &&
	    fail "another user renamed latest"
	as "echo 9 >> '$R/b/perm/latest'" 2>/dev/null &&
	    fail "another user appended"
	as "rm -f '$R/b/perm/latest'" 2>/dev/null &&
	    fail "another user unlinked latest"
	as "mkdir '$R/b/perm2'" 2>/dev/null && fail "another user made a dir"
	check_eq "unchanged by another user" "$(cat "$R/b/perm/latest")" keep
	check_eq "one version" "$(count "$R/b/perm")" 1
	check_eq "increment mode" "$(stat -c %a "$R/b/perm/increment")" 200
	fs_unmount
fi
echo "ok"
