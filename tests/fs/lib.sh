# tests/fs/lib.sh - shared set-up for the tests that mount tabletfs.
#
# Sourced by tests/fs/test_*.sh (POSIX sh, set -eu).  Makes a temporary
# directory T with a store S and a mount point M, unmounts and removes it
# all in an EXIT trap, and exits 77 (skip) when FUSE or the tools are not
# usable here.  Needs top_builddir (and top_srcdir) in the environment, as
# `make check` sets them.

: "${top_builddir:?top_builddir must be set}"
TABLETFS=$top_builddir/src/fs/tabletfs
TABLETCTL=$top_builddir/src/ctl/tabletctl

skip() {
	echo "SKIP: $*" >&2
	exit 77
}

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

[ -c /dev/fuse ] || skip "no /dev/fuse"
command -v fusermount3 >/dev/null 2>&1 || skip "no fusermount3"
command -v mountpoint >/dev/null 2>&1 || skip "no mountpoint(1)"
[ -x "$TABLETFS" ] || skip "tabletfs not built"
[ -x "$TABLETCTL" ] || skip "tabletctl not built"

T=$(mktemp -d "${TMPDIR:-/tmp}/tabletfs-test.XXXXXX")
S=$T/store
M=$T/mnt
mkdir "$M"

# With TABLETFS_TEST_CELL set to a cell's address (tests/cell/
# test_cell_fs.sh), S is that cell: `ctl init` empties it of its tables
# instead of making a store, and the mount is a client of the cell's
# tablet servers.  A test that needs a store's own files, lock or
# control socket calls fs_cell_skip.
CELL=${TABLETFS_TEST_CELL:-}
[ -z "$CELL" ] || S=$CELL

fs_cell_skip() {
	[ -z "$CELL" ] || skip "on a cell: $*"
}

# Unmount whatever a test left mounted, wait for its daemon, clean up.
fs_cleanup() {
	for m in "$T"/mnt*; do
		if mountpoint -q "$m" 2>/dev/null; then
			fusermount3 -u "$m" 2>/dev/null || umount -l "$m" || :
		fi
	done
	fs_wait_daemon
	rm -rf "$T"
}
trap fs_cleanup EXIT
trap 'exit 1' HUP INT TERM

ctl() {
	if [ -n "$CELL" ] && [ "$1" = init ]; then
		for ctl_t in $("$TABLETCTL" -s "$S" ls); do
			"$TABLETCTL" -s "$S" deletetable "$ctl_t" || return
		done
		return
	fi
	"$TABLETCTL" -s "$S" "$@"
}

# The pid of the daemon holding the store, from its lock file.
fs_daemon_pid() {
	cat "$S/LOCK" 2>/dev/null || :
}

# Whether some process holds the store's lock (flock(2) on S/LOCK; a
# daemon that exited may stay a zombie for a while, so its pid says less).
fs_store_busy() {
	if [ -n "$CELL" ]; then
		# A cell has no lock: whether a daemon of this test's mounts runs.
		# (ps shows it as "tabletfs: CELL on MOUNT").
		pgrep -f -- "^tabletfs: .* on $T/mnt" >/dev/null
	elif command -v flock >/dev/null 2>&1; then
		[ -e "$S/LOCK" ] && ! flock -n "$S/LOCK" true
	else
		pid=$(fs_daemon_pid)
		[ -n "$pid" ] && kill -0 "$pid" 2>/dev/null
	fi
}

# Wait (up to 30 s) until no process holds the store.  A daemon leaves in
# well under a second, but a killed one whose threads are in the kernel
# (a sync, a FUSE request) or a clean one flushing on a machine loaded by
# parallel builds and tests has been seen to take more than 5 s.
fs_wait_daemon() {
	i=0
	while fs_store_busy; do
		i=$((i + 1))
		[ $i -le 600 ] || fail "the daemon still holds $S"
		sleep 0.05
	done
}

# Wait (up to 5 s) until mount point $1 is mounted.
fs_wait_mounted() {
	i=0
	while ! mountpoint -q "$1"; do
		i=$((i + 1))
		[ $i -le 50 ] || return 1
		sleep 0.1
	done
}

# fs_mount [OPTION...]: mount S at M in the background.  Skip the test
# when this system cannot mount FUSE at all.
fs_mount() {
	if ! "$TABLETFS" "$@" "$S" "$M" 2>"$T/mount.err"; then
		cat "$T/mount.err" >&2
		if grep -q -e "Operation not permitted" \
		    -e "Permission denied" "$T/mount.err"; then
			skip "cannot mount FUSE here"
		fi
		fail "tabletfs $* $S $M"
	fi
	fs_wait_mounted "$M" || fail "$M not mounted after 5 s"
}

fs_unmount() {
	fusermount3 -u "$M"
	fs_wait_daemon
}

# A store with the paper's Webtable: contents (3 versions) and anchor.
fs_webtable() {
	ctl init
	ctl createtable webtable families=contents:maxversions=3,anchor
}

# expect_fail TEXT CMD...: CMD must fail with TEXT in its error output.
expect_fail() {
	want=$1
	shift
	if "$@" 2>"$T/err"; then
		fail "succeeded: $*"
	fi
	grep -q -- "$want" "$T/err" ||
	    fail "$*: expected '$want', got: $(cat "$T/err")"
}

# check_eq WHAT GOT WANT
check_eq() {
	[ "$2" = "$3" ] || fail "$1: got '$2', want '$3'"
}

# fs_small_store SIZE: put the store S on a tmpfs of SIZE (6m, 20m) at
# $T/small, unmounted in the EXIT trap after the mounts; skip (77) when
# not root or no tmpfs can be mounted.
fs_small_store() {
	[ "$(id -u)" -eq 0 ] || skip "not root: cannot mount a tmpfs"
	mkdir "$T/small"
	mount -t tmpfs -o size="$1" tmpfs "$T/small" 2>/dev/null ||
	    skip "cannot mount a tmpfs"
	S=$T/small/store
	trap fs_small_cleanup EXIT
}

fs_small_cleanup() {
	for m in "$T"/mnt*; do
		if mountpoint -q "$m" 2>/dev/null; then
			fusermount3 -u "$m" 2>/dev/null || umount -l "$m" || :
		fi
	done
	fs_wait_daemon || :
	umount "$T/small" 2>/dev/null || umount -l "$T/small" || :
	rm -rf "$T"
}
