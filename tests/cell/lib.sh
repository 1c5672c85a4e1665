# tests/cell/lib.sh - shared set-up for the tests that run a cell.
#
# Sourced by tests/cell/test_*.sh (POSIX sh, set -eu).  Makes a temporary
# directory T, starts a cell in T/cell with scripts/cell (ZooKeeper on a
# free loopback port, two masters, tablet servers), and stops it all and
# removes T in an EXIT trap, mounts included.  Exits 77 (skip) when Java
# or ZooKeeper is not installed.  Needs top_builddir and top_srcdir, as
# `make check` sets them.

: "${top_builddir:?top_builddir must be set}"
: "${top_srcdir:?top_srcdir must be set}"
TABLETD=$top_builddir/src/tabletd/tabletd
TABLETCTL=$top_builddir/src/ctl/tabletctl
TABLETFS=$top_builddir/src/fs/tabletfs
CELL_SCRIPT=$top_srcdir/scripts/cell
# A short session, so that failovers in tests take seconds.
SESSION_MS=${SESSION_MS:-2000}

skip() {
	echo "SKIP: $*" >&2
	exit 77
}

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

command -v java >/dev/null 2>&1 || skip "no java"
[ -f /usr/share/java/zookeeper.jar ] || skip "no ZooKeeper (zookeeper package)"
[ -x "$TABLETD" ] || skip "tabletd not built"

T=$(mktemp -d "${TMPDIR:-/tmp}/tabletfs-cell.XXXXXX")
C=$T/cell
CELL=

cell_cleanup() {
	for m in "$T"/mnt*; do
		if mountpoint -q "$m" 2>/dev/null; then
			fusermount3 -u "$m" 2>/dev/null || umount -l "$m" || :
		fi
	done
	BUILD_DIR=$top_builddir "$CELL_SCRIPT" stop --dir "$C" || :
	# A failing test leaves its processes' logs for inspection.
	if [ "${cell_ok:-0}" != 1 ] && [ -d "$C/logs" ]; then
		for f in "$C"/logs/*.log; do
			echo "---- $f" >&2
			tail -n 20 "$f" >&2
		done
	fi
	rm -rf "$T"
}
trap cell_cleanup EXIT
trap 'exit 1' HUP INT TERM

# Start a cell of $1 servers (default 3); sets CELL.
cell_start() {
	CELL=$(BUILD_DIR=$top_builddir "$CELL_SCRIPT" start --dir "$C" \
	    --servers "${1:-3}" --session-timeout "$SESSION_MS") ||
	    fail "the cell did not start"
}

# One more tablet server, number $1.
cell_server_start() {
	"$TABLETD" server "$CELL" --session-timeout "$SESSION_MS" --daemon \
	    --pidfile "$C/server-$1.pid" 2>>"$C/logs/server-$1.log" ||
	    fail "server $1 did not start"
}

ctl() {
	"$TABLETCTL" -s "$CELL" "$@"
}

# The pid of the server that serves the cell's store (it holds the
# store's lock, which names its holder).
cell_serving_pid() {
	cat "$C/storage/LOCK" 2>/dev/null || :
}

now_ms() {
	date +%s%3N
}
