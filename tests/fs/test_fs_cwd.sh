#!/bin/sh
# test_fs_cwd.sh - a rename keeps inode numbers, as on every POSIX
# filesystem, so what holds a renamed directory follows it: a shell whose
# cwd is in a column or family that another process renames still names
# its cwd (pwd -P, /bin/pwd print the new path) and reads relative paths;
# ls -i and stat -c %i show one inode before and after mv, of a directory
# and of a file; mv onto an empty directory replaces it (the name then
# reads what moved, and nothing is made in the replaced one); tail -f and
# an open writer in a renamed column read and commit at its new name; and
# a shell whose cwd another process renames back and forth stats, reads,
# lists and asks getcwd there without a failure, its inode never
# changing.
set -eu
. "${top_srcdir:?}/tests/fs/lib.sh"

# Under the sanitizers (TEST_SMALL) the loops are 30 % as long.
N=100
if [ -n "${TEST_SMALL:-}" ]; then
	N=30
fi
ctl init
ctl createtable t families=f,g
# No entry or attribute cache: every path walk asks the daemon again, so
# a dentry whose inode number changed would be dropped at once.
fs_mount -o cache_timeout=0
P=$(cd "$M" && pwd -P)/t/r	# the physical path pwd -P prints
R=$M/t/r

# wait_go NAME: wait (up to 10 s) until $T/NAME exists: each shell below
# makes in.* once in its cwd, and waits for what the test makes after the
# rename.
wait_go() {
	i=0
	until [ -e "$T/$1" ] || [ $i -ge 200 ]; do
		sleep 0.05
		i=$((i + 1))
	done
}

# A shell in a column that another process renames.
mkdir -p "$R/f/q"
echo v > "$R/f/q/latest"
ino=$(stat -c %i "$R/f/q")
(
	cd "$R/f/q"
	: > "$T/in.col"
	wait_go moved
	pwd -P
	/bin/pwd
	cat latest
) > "$T/col.out" 2>&1 &
col=$!
wait_go in.col
mv "$R/f/q" "$R/f/q2"
check_eq "stat -c %i of the renamed column" "$(stat -c %i "$R/f/q2")" "$ino"
check_eq "ls -i of the renamed column" "$(ls -i "$R/f" | awk '{print $1}')" \
    "$ino"
: > "$T/moved"
wait "$col" || :
check_eq "a cwd in a renamed column" "$(cat "$T/col.out")" "$P/f/q2
$P/f/q2
v"

# Shells in a family and in a column inside it, while the family is
# renamed (g is in the schema).
fino=$(stat -c %i "$R/f")
(
	cd "$R/f"
	: > "$T/in.fam"
	wait_go fmoved
	pwd -P
	cat q2/latest
) > "$T/fam.out" 2>&1 &
fam=$!
(
	cd "$R/f/q2"
	: > "$T/in.famcol"
	wait_go fmoved
	/bin/pwd
	cat latest
) > "$T/famcol.out" 2>&1 &
famcol=$!
wait_go in.fam
wait_go in.famcol
mv "$R/f" "$R/g"
check_eq "inode of the renamed family" "$(stat -c %i "$R/g")" "$fino"
check_eq "inode of a column in it" "$(stat -c %i "$R/g/q2")" "$ino"
: > "$T/fmoved"
wait "$fam" || :
wait "$famcol" || :
check_eq "a cwd in a renamed family" "$(cat "$T/fam.out")" "$P/g
v"
check_eq "a cwd in a column of a renamed family" "$(cat "$T/famcol.out")" \
    "$P/g/q2
v"

# mv onto an empty (pending) directory replaces it: the name reads what
# moved, under the inode that moved, and a shell in the replaced
# directory is in a deleted one, where nothing can be made (what getcwd
# says there is the kernel's affair: on ext4 it may still name it).
mkdir -p "$R/f/e1" "$R/f/e2"
echo moved > "$R/f/e1/latest"
eino=$(stat -c %i "$R/f/e1")
(
	cd "$R/f/e2"
	: > "$T/in.repl"
	wait_go replaced
	if (echo x > latest) 2>/dev/null; then
		echo "a write in a replaced directory"
	fi
) > "$T/repl.out" 2>&1 &
repl=$!
wait_go in.repl
mv -T "$R/f/e1" "$R/f/e2"
check_eq "inode of a directory renamed onto another" \
    "$(stat -c %i "$R/f/e2")" "$eino"
check_eq "what it holds" "$(cat "$R/f/e2/latest")" "moved"
: > "$T/replaced"
wait "$repl" || :
check_eq "the replaced directory is gone" "$(cat "$T/repl.out")" ""
check_eq "and so is the moved one's old name" "$(ls "$R/f")" "e2"

# A file keeps its inode through mv too.
echo one > "$R/g/q2/100"
vino=$(ls -i "$R/g/q2/100" | awk '{print $1}')
mv "$R/g/q2/100" "$R/g/q2/200"
check_eq "ls -i of a renamed version" \
    "$(ls -i "$R/g/q2/200" | awk '{print $1}')" "$vino"
check_eq "its value" "$(cat "$R/g/q2/200")" "one"

# tail -f of latest, and a writer appending to it, in a column that is
# renamed under them: tail reads what is appended at the new name, and
# the writer's close commits there.
mkdir -p "$R/f/tail"
echo first > "$R/f/tail/latest"
(cd "$R/f/tail" && exec tail -s 0.1 -f latest) > "$T/tail.out" &
tail_pid=$!
exec 3>>"$R/f/tail/latest"
i=0
until grep -q first "$T/tail.out" || [ $i -ge 100 ]; do
	sleep 0.1
	i=$((i + 1))
done
mv "$R/f/tail" "$R/f/tailed"
echo second >> "$R/f/tailed/latest"
echo third >&3
exec 3>&-
i=0
until grep -q third "$T/tail.out" || [ $i -ge 100 ]; do
	sleep 0.1
	i=$((i + 1))
done
kill $tail_pid 2>/dev/null || :
wait $tail_pid 2>/dev/null || :
check_eq "tail -f in a renamed column" "$(cat "$T/tail.out")" "first
second
third"
check_eq "the writer committed at the new name" \
    "$(cat "$R/f/tailed/latest")" "first
second
third"
[ ! -e "$R/f/tail" ] || fail "a write recreated the old name"

# A column renamed back and forth while a shell in it stats, reads and
# lists names relative to its cwd and asks for its cwd: no ENOENT, one
# inode throughout.
mkdir -p "$R/f/a"
echo 0 > "$R/f/a/latest"
aino=$(stat -c %i "$R/f/a")
(
	cd "$R/f/a"
	: > "$T/ready"
	i=0
	until [ -e "$T/done" ] || [ $i -ge $((N * 50)) ]; do
		stat -c %i . >> "$T/inos" || echo "stat . failed"
		[ -n "$(cat latest)" ] || echo "cat latest failed"
		[ -n "$(ls)" ] || echo "ls failed"
		# /bin/pwd asks getcwd(2).  Not bash's pwd -P: it first walks
		# $PWD by name, and a lookup of the old name that the kernel
		# sends to revalidate it, answered after the rename, makes the
		# kernel drop the moved dentry until the next rename (a race
		# of FUSE's revalidation, whatever the daemon answers).
		case $(/bin/pwd) in
		"$P/f/a" | "$P/f/b") ;;
		*) echo "/bin/pwd failed" ;;
		esac
		i=$((i + 1))
	done
) > "$T/loop.out" 2>&1 &
loop=$!
# A failure below stops the loop too, or its cwd would keep the mount
# busy past the unmount.
trap ': > "$T/done"; fs_cleanup' EXIT
wait_go ready
i=0
while [ $i -lt $N ]; do
	mv "$R/f/a" "$R/f/b" || fail "mv a b ($i): $?"
	mv "$R/f/b" "$R/f/a" || fail "mv b a ($i): $?"
	i=$((i + 1))
done
: > "$T/done"
wait "$loop" || :
check_eq "failures in the renamed cwd" "$(sort "$T/loop.out" | uniq -c)" ""
check_eq "its inode throughout" "$(sort -u "$T/inos")" "$aino"
[ "$(wc -l < "$T/inos")" -gt 1 ] || fail "the stat loop did not run"
