#!/bin/sh
# test_fs_replace.sh - the everyday tools that replace a file, run for real
# on a mount: each ends with every older version intact and the new value
# as the newest version (tabletfs(5), "No everyday tool loses a version").
#   - unlink-then-create: install, cp --remove-destination, tar -x (which
#     unlinks and retries O_EXCL), mv from another filesystem;
#   - write-a-temporary-file-then-rename: sed -i, perl -pi, vim -es and
#     ex, rsync (default and --inplace), Python's mkstemp + os.replace and
#     NAME.tmp + os.replace;
#   - tar and rsync out of the mount copy every version and nothing else.
set -eu
. "${top_srcdir:?}/tests/fs/lib.sh"

fs_webtable
fs_mount
A=$M/webtable/com.example/anchor

# versions DIR: the version names of column DIR, oldest first.
versions() {
	ls "$1" | grep '^[1-9][0-9]*$' | sort -n
}

# fill DIR: a column of three versions v1 v2 v3; DIR/before keeps their
# names and values.
fill() {
	mkdir -p "$1"
	for v in 1 2 3; do
		echo "v$v" > "$1/latest"
	done
	for ts in $(versions "$1"); do
		printf '%s %s\n' "$ts" "$(cat "$1/$ts")"
	done > "$T/before"
}

# kept WHAT DIR NEW: the versions of fill are there with their values,
# and the newest version (and latest) reads NEW.
kept() {
	for ts in $(cut -d' ' -f1 "$T/before"); do
		[ -f "$2/$ts" ] || fail "$1: version $ts lost"
		check_eq "$1: version $ts" "$ts $(cat "$2/$ts")" \
		    "$(grep "^$ts " "$T/before")"
	done
	check_eq "$1: versions" "$(versions "$2" | wc -l)" \
	    $(($(wc -l < "$T/before") + 1))
	check_eq "$1: newest" "$(cat "$2/$(versions "$2" | tail -n 1)")" "$3"
	check_eq "$1: latest" "$(cat "$2/latest")" "$3"
}

echo installed > "$T/src"

fill "$A/install"
install -m 644 "$T/src" "$A/install/latest"
kept install "$A/install" installed

fill "$A/cp"
cp --remove-destination "$T/src" "$A/cp/latest"
kept "cp --remove-destination" "$A/cp" installed

fill "$A/mv"
cp "$T/src" "$T/src.mv"
mv -f "$T/src.mv" "$A/mv/latest"
kept "mv from another filesystem" "$A/mv" installed

# tar -x over a column: tar opens with O_EXCL, unlinks on EEXIST, and
# retries; before, every retry deleted a version.
fill "$A/tar"
mkdir -p "$T/x/com.example/anchor/tar"
echo untarred > "$T/x/com.example/anchor/tar/latest"
tar -cf "$T/x.tar" -C "$T/x" .
tar -xf "$T/x.tar" -C "$M/webtable"
kept "tar -x" "$A/tar" untarred

# Temporary file, then rename() over latest.
fill "$A/sed"
sed -i 's/v3/sed/' "$A/sed/latest"
kept "sed -i" "$A/sed" sed

fill "$A/perl"
perl -pi -e 's/v3/perl/' "$A/perl/latest"
kept "perl -pi" "$A/perl" perl

fill "$A/vim"
vim -es -u NONE -c '%s/v3/vim/' -c 'wq' "$A/vim/latest" </dev/null
kept "vim -es" "$A/vim" vim

fill "$A/ex"
ex -s -u NONE -c '%s/v3/ex/' -c 'x' "$A/ex/latest" </dev/null
kept "ex" "$A/ex" ex

fill "$A/py"
python3 - "$A/py" <<'END'
import os, sys, tempfile
d = sys.argv[1]
fd, path = tempfile.mkstemp(dir=d)
os.write(fd, b"mkstemp\n")
os.fsync(fd)
os.close(fd)
os.replace(path, os.path.join(d, "latest"))
with open(os.path.join(d, "latest.tmp"), "w") as f:
    f.write("python\n")
os.replace(os.path.join(d, "latest.tmp"), os.path.join(d, "latest"))
END
check_eq "python: temporary files gone" \
    "$(ls "$A/py" | grep -vc '^[1-9][0-9]*$' || :)" 0
check_eq "python: two versions more" "$(versions "$A/py" | wc -l)" 5
check_eq "python: latest" "$(cat "$A/py/latest")" python

# rsync into the mount: its temporary file (.latest.XXXXXX), then rename.
fill "$A/rsync"
mkdir -p "$T/r/com.example/anchor/rsync"
echo rsynced > "$T/r/com.example/anchor/rsync/latest"
touch -d '2001-01-01' "$T/r/com.example/anchor/rsync/latest"
rsync -r --times "$T/r/" "$M/webtable/"
kept rsync "$A/rsync" rsynced
fill "$A/rsync"
echo inplace > "$T/r/com.example/anchor/rsync/latest"
touch -d '2002-02-02' "$T/r/com.example/anchor/rsync/latest"
rsync -r --times --inplace "$T/r/" "$M/webtable/"
kept "rsync --inplace" "$A/rsync" inplace
# A second run with --checksum sends nothing: no new version.
n=$(versions "$A/rsync" | wc -l)
rsync -r --times --checksum "$T/r/" "$M/webtable/"
check_eq "rsync --checksum again" "$(versions "$A/rsync" | wc -l)" "$n"

# Out of the mount: every version, no control or temporary file.
echo tmp > "$A/rsync/left.tmp"
rm "$A/rsync/left.tmp"
( cd "$M/webtable" && find . -type f | LC_ALL=C sort ) > "$T/want"
grep -v '/[1-9][0-9]*$' "$T/want" && fail "find lists a non-version"
rsync -a "$M/webtable/" "$T/out/"
( cd "$T/out" && find . -type f | LC_ALL=C sort ) > "$T/got"
cmp "$T/got" "$T/want" || fail "rsync out: $(diff "$T/want" "$T/got")"
tar -cf "$T/out.tar" -C "$M/webtable" .
check_eq "tar out" "$(tar -tf "$T/out.tar" | grep -c '/[1-9][0-9]*$')" \
    "$(wc -l < "$T/want")"
tar -tf "$T/out.tar" | grep -q 'schema\|tablets' &&
    fail "tar carried a control file"

# A temporary file is in its column as a file is in a directory: it
# follows a rename of the column, and keeps rmdir from removing it.
mkdir -p "$A/moving"
echo kept > "$A/moving/latest"
echo draft > "$A/moving/.draft.swp"
expect_fail "Directory not empty" rmdir "$A/moving"
mv "$A/moving" "$A/moved"
check_eq "temporary file moved" "$(cat "$A/moved/.draft.swp")" draft
[ -e "$A/moving/.draft.swp" ] && fail "temporary file left behind"
mv "$A/moved/.draft.swp" "$A/moved/latest"
check_eq "committed after the move" "$(cat "$A/moved/latest")" draft

fs_unmount
echo "ok"
