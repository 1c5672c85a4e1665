#!/bin/sh
# test_fs_mount.sh - the daemon's life: usage and option errors exit 1
# with one line; a second mount of a locked store fails naming the
# holder; data written survives fusermount3 -u and SIGTERM (both unmount
# cleanly) and a remount; -o ro refuses every change with EROFS;
# fstab-style options are accepted; the daemon closes the descriptors
# its caller left open and ps shows it as "tabletfs: STORE on MOUNT";
# -f stays in the foreground; -d logs requests, and a reader's close
# sends no FLUSH; mount(8) with type fuse.tabletfs works.
set -eu
. "${top_srcdir:?}/tests/fs/lib.sh"

fs_webtable

# Errors reach the terminal and exit 1; nothing is left mounted.
expect_fail "usage" "$TABLETFS" "$S"
expect_fail "No such file" "$TABLETFS" "$T/nostore" "$M"
expect_fail "max_cell" "$TABLETFS" -o max_cell=lots "$S" "$M"
# 0 would be the API's "default", not what was asked for; a max_cell
# over what a commit-log record holds could never be written.
expect_fail "max_cell=0: must be above 0" "$TABLETFS" -o max_cell=0 "$S" "$M"
expect_fail "cache_size=0: must be above 0" "$TABLETFS" -o cache_size=0 \
    "$S" "$M"
expect_fail "the largest value a commit log record holds" "$TABLETFS" \
    -o max_cell=256m "$S" "$M"
expect_fail "sync=" "$TABLETFS" -o sync=sometimes "$S" "$M"
mountpoint -q "$M" && fail "mounted after an error"

# The daemon keeps none of its caller's descriptors: fd 3 here stays open
# in this shell only.
exec 3>"$T/caller-fd"
fs_mount
exec 3>&-
pid=$(fs_daemon_pid)
if ls -l "/proc/$pid/fd" | grep -q "caller-fd"; then
	fail "the daemon holds its caller's fd 3"
fi
# ps names the store (as an absolute path) and the mount point.
check_eq "ps title" "$(ps -o args= -p "$pid")" \
    "tabletfs: $(realpath "$S") on $M"
R=$M/webtable/row
mkdir -p "$R/anchor/a"
echo kept > "$R/anchor/a/42"
grep -q "^mode: rw" "$M/.status" || fail ".status: $(cat "$M/.status")"

# A second mount of the same store names the holder.
pid=$(fs_daemon_pid)
mkdir "$T/mnt2"
expect_fail "held by pid $pid" "$TABLETFS" "$S" "$T/mnt2"
mountpoint -q "$T/mnt2" && fail "second mount succeeded"
grep -q "^tabletfs: " "$T/err" || fail "message: $(cat "$T/err")"

# fusermount3 -u flushes and exits; the data is there after a remount.
fs_unmount
mountpoint -q "$M" && fail "still mounted"
fs_mount -o rw,nodev,nosuid,noexec,auto,_netdev,defaults,cache_timeout=0
check_eq "after remount" "$(cat "$R/anchor/a/42")" "kept"

# SIGTERM unmounts cleanly and keeps what was written.
echo again > "$R/anchor/a/43"
kill -TERM "$(fs_daemon_pid)"
fs_wait_daemon
mountpoint -q "$M" && fail "still mounted after SIGTERM"
fs_mount -o sync=always,memtable_size=1m,cache_size=1m
check_eq "after SIGTERM" "$(cat "$R/anchor/a/43")" "again"
fs_unmount

# Read-only: reads work, every change is EROFS.
fs_mount -o ro
check_eq "ro read" "$(cat "$R/anchor/a/latest")" "again"
grep -q "^mode: ro" "$M/.status" || fail ".status: $(cat "$M/.status")"
expect_fail "Read-only" sh -c "echo x > '$R/anchor/a/latest'"
expect_fail "Read-only" sh -c "echo x > '$R/anchor/a/44'"
expect_fail "Read-only" mkdir "$R/anchor/b"
expect_fail "Read-only" rm "$R/anchor/a/42"
check_eq "ro mode" "$(stat -c %a "$R/anchor/a/42")" 444
fs_unmount

# -f stays in the foreground until unmounted, then exits 0.
"$TABLETFS" -f "$S" "$M" 2>"$T/fg.err" &
fg=$!
fs_wait_mounted "$M" || fail "-f did not mount: $(cat "$T/fg.err")"
check_eq "-f read" "$(cat "$R/anchor/a/42")" "kept"
fusermount3 -u "$M"
wait "$fg" || fail "-f exited $?"

# -d logs each request: a reader's close sends no FLUSH (it has nothing to
# commit), a writer's close does.
"$TABLETFS" -d "$S" "$M" 2>"$T/debug.log" &
fg=$!
fs_wait_mounted "$M" || fail "-d did not mount: $(cat "$T/debug.log")"
cat "$R/anchor/a/42" >/dev/null
sleep 0.2
grep -q "opcode: OPEN" "$T/debug.log" || fail "-d logged no OPEN"
! grep -q "opcode: FLUSH" "$T/debug.log" || fail "a reader's close flushed"
echo more > "$R/anchor/a/43"
check_eq "-d read back" "$(cat "$R/anchor/a/43")" "more"
grep -q "opcode: FLUSH" "$T/debug.log" || fail "a writer's close did not flush"
fusermount3 -u "$M"
wait "$fg" || fail "-d exited $?"

# Through mount(8) and mount.fuse3, as from /etc/fstab.  (Type
# fuse.tabletfs needs tabletfs on mount's own PATH, i.e. installed; the
# PROGRAM#SOURCE form runs the built one.)
if [ -x /sbin/mount.fuse3 ] || [ -x /usr/sbin/mount.fuse3 ]; then
	mount -t fuse -o defaults,nodev "$TABLETFS#$S" "$M" ||
	    fail "mount -t fuse"
	fs_wait_mounted "$M" || fail "mount(8) did not mount"
	mount | grep -q "on $M type fuse.tabletfs" || fail "mount type"
	check_eq "mount(8) read" "$(cat "$R/anchor/a/42")" "kept"
	umount "$M"
	fs_wait_daemon
fi
