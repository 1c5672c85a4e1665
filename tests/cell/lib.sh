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
# The bound on a failover (a master's takeover, a store served again):
# the session timeout and 5 s more, three times that under the sanitizers
# and valgrind (TEST_SMALL), whose runs look for memory and thread errors
# and are several times slower.
LIMIT=$((SESSION_MS + 5000))
case ${TEST_SMALL:-0} in
0 | "") ;;
*) LIMIT=$((LIMIT * 3)) ;;
esac

skip() {
	echo "SKIP: $*" >&2
	exit 77
}

fail() {
	echo "FAIL: $*" >&2
	cell_failure="$*"
	exit 1
}

command -v java >/dev/null 2>&1 || skip "no java"
[ -f /usr/share/java/zookeeper.jar ] || skip "no ZooKeeper (zookeeper package)"
[ -x "$TABLETD" ] || skip "tabletd not built"

# A server whose lease ends leaves at once (_exit from its lease thread,
# by design: tabletd.h), its other threads still running, which
# ThreadSanitizer would report as leaked threads.
TSAN_OPTIONS="${TSAN_OPTIONS:-} report_thread_leaks=0"
export TSAN_OPTIONS

T=$(mktemp -d "${TMPDIR:-/tmp}/tabletfs-cell.XXXXXX")
C=$T/cell
CELL=
CELL_PIDS=""

cell_cleanup() {
	# Loops a failed test left running would run on without T.
	touch "$T/stop" 2>/dev/null || :
	for p in $CELL_PIDS; do
		kill "$p" 2>/dev/null || :
	done
	for m in "$T"/mnt*; do
		if mountpoint -q "$m" 2>/dev/null; then
			fusermount3 -u "$m" 2>/dev/null || umount -l "$m" || :
		fi
	done
	BUILD_DIR=$top_builddir "$CELL_SCRIPT" stop --dir "$C" || :
	# What a sanitizer found in a daemon fails the test that ran it.
	if [ -d "$C/logs" ] && grep -l -e 'WARNING: ThreadSanitizer' \
	    -e 'ERROR: AddressSanitizer' -e 'runtime error:' \
	    -e 'ERROR: LeakSanitizer' "$C"/logs/*.log >"$T/sanitized" 2>&1; then
		echo "FAIL: a sanitizer reported in $(cat "$T/sanitized")" >&2
		cell_ok=0
		cell_status=1
	fi
	# A failing test leaves its processes' logs for inspection.
	if [ "${cell_ok:-0}" != 1 ] && [ -d "$C/logs" ]; then
		for f in "$C"/logs/*.log; do
			echo "---- $f" >&2
			tail -n 20 "$f" >&2
		done
		# Said again last, where a cut of a long log keeps it.
		[ -z "${cell_failure:-}" ] ||
		    echo "FAIL (said above the logs): $cell_failure" >&2
		[ ! -s "$T/sanitized" ] || grep -h -m 3 -e 'Sanitizer' \
		    -e 'runtime error:' $(cat "$T/sanitized") >&2 || :
	fi
	rm -rf "$T"
	[ "${cell_status:-0}" = 0 ] || exit "$cell_status"
}
trap cell_cleanup EXIT
trap 'exit 1' HUP INT TERM

# Start a cell of $1 servers (default 3); sets CELL.  CELL_START_ARGS
# go to scripts/cell start too (--rados: tests/rados/test_cell_rados.sh).
cell_start() {
	# shellcheck disable=SC2086
	CELL=$(BUILD_DIR=$top_builddir "$CELL_SCRIPT" start --dir "$C" \
	    --servers "${1:-3}" --session-timeout "$SESSION_MS" \
	    ${CELL_START_ARGS:-}) ||
	    fail "the cell did not start"
}

# One more tablet server, number $1.
cell_server_start() {
	"$TABLETD" server "$CELL" --session-timeout "$SESSION_MS" --daemon \
	    --pidfile "$C/server-$1.pid" 2>>"$C/logs/server-$1.log" ||
	    fail "server $1 did not start"
}

# What a test of servers whose clocks differ needs: FAKETIME_LIB, the
# path of libfaketime; it skips (77) without it, and in the instrumented
# builds (the preloaded library would load before their runtimes).
cell_faketime_needs() {
	FAKETIME_LIB=
	for cf_d in /usr/lib/x86_64-linux-gnu /usr/lib/aarch64-linux-gnu \
	    /usr/lib; do
		if [ -f "$cf_d/faketime/libfaketimeMT.so.1" ]; then
			FAKETIME_LIB=$cf_d/faketime/libfaketimeMT.so.1
			break
		fi
	done
	[ -n "$FAKETIME_LIB" ] || skip "no libfaketime (faketime package)"
	if grep -q -- '-fsanitize=' "$top_builddir/Makefile"; then
		skip "libfaketime would load before the sanitizer's runtime"
	fi
}

# One more tablet server, number $1, whose clock (realtime; not the
# monotonic clock its leases run on) is $2 seconds ahead.  Returns once
# it listens.  After cell_faketime_needs.
cell_server_start_ahead() {
	LD_PRELOAD=$FAKETIME_LIB FAKETIME="+${2}s" \
	    FAKETIME_DONT_FAKE_MONOTONIC=1 "$TABLETD" server "$CELL" \
	    --session-timeout "$SESSION_MS" --daemon \
	    --pidfile "$C/server-$1.pid" 2>>"$C/logs/server-$1.log" ||
	    fail "server $1, $2 s ahead, did not start"
	wait_log 10000 "$C/logs/server-$1.log" "listening on" ||
	    fail "server $1, $2 s ahead, does not listen"
}

# One more tablet server, c1, c2, ..., in the foreground as a child of
# this shell, so that its exit status can be read; its pid is added to
# cell_children.  Returns once it listens.
cell_next=1
cell_children=""
cell_child_start() {
	"$TABLETD" server "$CELL" --session-timeout "$SESSION_MS" \
	    --pidfile "$C/server-c$cell_next.pid" \
	    2>>"$C/logs/server-c$cell_next.log" &
	cell_children="$cell_children $!"
	wait_log 10000 "$C/logs/server-c$cell_next.log" "listening on" ||
	    fail "server c$cell_next did not start"
	cell_next=$((cell_next + 1))
}

ctl() {
	"$TABLETCTL" -s "$CELL" "$@"
}

# What a test that mounts the cell and writes with /bin/echo needs: it
# skips (77) without it.
cell_mount_needs() {
	[ -c /dev/fuse ] || skip "no /dev/fuse"
	command -v fusermount3 >/dev/null 2>&1 || skip "no fusermount3"
	command -v mountpoint >/dev/null 2>&1 || skip "no mountpoint(1)"
	[ -x "$TABLETFS" ] || skip "tabletfs not built"
	[ -x /bin/echo ] || skip "no /bin/echo"
}

# Mount the cell at $1 (made here), waiting up to 10 s; skips when FUSE
# cannot mount here.  The EXIT trap unmounts $T/mnt*.
cell_mount() {
	mkdir "$1"
	if ! "$TABLETFS" "$CELL" "$1" 2>"$T/mount.err"; then
		cat "$T/mount.err" >&2
		grep -q -e "Operation not permitted" -e "Permission denied" \
		    -e "fuse: device not found" "$T/mount.err" &&
		    skip "cannot mount FUSE here"
		fail "tabletfs $CELL $1"
	fi
	cm_i=0
	until mountpoint -q "$1"; do
		cm_i=$((cm_i + 1))
		[ $cm_i -le 100 ] || fail "$1 not mounted after 10 s"
		sleep 0.1
	done
}

# The pid of the server that serves the cell's store: its lock names its
# holder, a file of the storage directory, or on RADOS (scripts/cell
# start --rados: rados://POOL/NAME?conf=FILE) the object NAME/LOCK.
cell_serving_pid() {
	if [ -f "$C/storage-url" ]; then
		csp_url=$(cat "$C/storage-url")
		csp_url=${csp_url#rados://}
		timeout 20 rados -c "${csp_url#*\?conf=}" -p "${csp_url%%/*}" \
		    get "$(echo "${csp_url%%\?*}" | cut -d/ -f2)/LOCK" - \
		    2>/dev/null || :
	else
		cat "$C/storage/LOCK" 2>/dev/null || :
	fi
}

. "$top_srcdir/tests/cell/wait.sh"

# The pids of the live masters that logged their election: one, but for
# a moment during a takeover (the test decides what it allows).
cell_master_pids() {
	for p in $(sed -n \
	    's/^tabletd master\[\([0-9]*\)\]: elected master.*/\1/p' \
	    "$C"/logs/master-*.log); do
		if alive "$p"; then
			echo "$p"
		fi
	done
}

# The RPC address ("127.0.0.1:PORT") of the server with pid $1, from the
# "listening on" line it logs.
cell_server_address() {
	sed -n "s/^tabletd server\\[$1\\]: listening on \\([^,]*\\),.*/\\1/p" \
	    "$C"/logs/server-*.log | tail -n 1
}

# Another master, number $1 (a standby while one is elected).
cell_master_start() {
	"$TABLETD" master "$CELL" --session-timeout "$SESSION_MS" --daemon \
	    --pidfile "$C/master-$1.pid" 2>>"$C/logs/master-$1.log" ||
	    fail "master $1 did not start"
}

# cell_spawn CMD...: run CMD (a writer or reader loop, which stops when
# $T/stop exists) in the background until cell_spawned_stop.
cell_spawn() {
	"$@" &
	CELL_PIDS="$CELL_PIDS $!"
}

# Stop the loops cell_spawn started, and wait for them.
cell_spawned_stop() {
	touch "$T/stop"
	for p in $CELL_PIDS; do
		wait "$p" || :
	done
	CELL_PIDS=""
}

# A writer loop through the client library: writer N sets rows wN-1,
# wN-2, ... until $T/stop exists, and appends each acknowledged one with
# its value, the time it was acknowledged and the time the write began
# (ms; the first is taken after the tool exits, so it can be late) to
# $T/acked.N.
cell_writer() {
	n=0
	: >"$T/acked.$1"
	while [ ! -e "$T/stop" ]; do
		n=$((n + 1))
		cw_begin=$(now_ms)
		if ctl set t "w$1-$n" "f:q=v$1-$n" 2>>"$T/writer.err"; then
			printf 'w%s-%s\tv%s-%s\t%s\t%s\n' "$1" "$n" "$1" "$n" \
			    "$(now_ms)" "$cw_begin" >>"$T/acked.$1"
		fi
	done
}

# Every acknowledged write of the cell_writer()s must be in table t:
# fails naming the missing ones.  Prints how many there were.
cell_check_acked() {
	cut -f 1,2 "$T"/acked.* | sort >"$T/acked"
	ca_n=$(wc -l <"$T/acked")
	[ "$ca_n" -gt 0 ] || fail "no write was acknowledged"
	ctl export t | awk -F '\t' 'NF == 5 { print $1 "\t" $5 }' |
	    sort >"$T/stored"
	ca_missing=$(comm -23 "$T/acked" "$T/stored" | wc -l)
	if [ "$ca_missing" -ne 0 ]; then
		comm -23 "$T/acked" "$T/stored" | head >&2
		fail "$ca_missing of $ca_n acknowledged writes are lost"
	fi
	echo "$ca_n"
}

# A writer loop of two columns a row: writer N sets f:a and f:b of rows
# wN-1, wN-2, ... in one mutation each (a torn row would show one of
# them) until $T/stop exists, and appends each acknowledged one with its
# value to $T/acked.N.
cell_pair_writer() {
	n=0
	: >"$T/acked.$1"
	while [ ! -e "$T/stop" ]; do
		n=$((n + 1))
		if ctl set t "w$1-$n" "f:a=v$1-$n" "f:b=v$1-$n" \
		    2>>"$T/writer.err"; then
			printf 'w%s-%s\tv%s-%s\n' "$1" "$n" "$1" "$n" \
			    >>"$T/acked.$1"
		fi
	done
}

# Every write of the cell_pair_writer()s must be in table t with both
# of its columns: fails naming the lost or torn ones.  Prints how many
# there were.
cell_check_acked_pairs() {
	cp_n=$(cat "$T"/acked.* | wc -l)
	[ "$cp_n" -gt 0 ] || fail "no write was acknowledged"
	cat "$T"/acked.* |
	    awk -F '\t' '{ print $1 "\ta\t" $2; print $1 "\tb\t" $2 }' |
	    sort >"$T/acked"
	ctl export t |
	    awk -F '\t' 'NF == 5 && $2 == "f" { print $1 "\t" $3 "\t" $5 }' |
	    sort >"$T/stored"
	cp_missing=$(comm -23 "$T/acked" "$T/stored" | wc -l)
	if [ "$cp_missing" -ne 0 ]; then
		comm -23 "$T/acked" "$T/stored" | head >&2
		fail "$cp_missing cells of $cp_n acknowledged writes are lost or torn"
	fi
	echo "$cp_n"
}

# The number of acknowledged writes so far.
cell_acked_count() {
	cat "$T"/acked.* 2>/dev/null | wc -l
}

# Wait (LIMIT ms at most) until the tablets of table $1 sit at $2
# servers; cell_assignments' lines in $T/assigned.
cell_wait_servers() {
	cw_t0=$(now_ms)
	until cell_assignments "$1" >"$T/assigned" 2>/dev/null &&
	    [ "$(awk '$2 != "-" { print $2 }' "$T/assigned" | sort -u |
	    wc -l)" -eq "$2" ]; do
		[ $(( $(now_ms) - cw_t0 )) -lt "$LIMIT" ] || {
			cat "$T/assigned" >&2
			fail "the tablets of $1 did not go to $2 servers"
		}
		sleep 0.1
	done
}

# The server each tablet of table $1 is assigned to, as tabletctl tablets
# says: "N SERVER" for the Nth tablet in row order ("-": none).
cell_assignments() {
	ctl tablets "$1" | awk -F '\t' '{
		s = "-"
		for (i = 1; i <= NF; i++)
			if ($i ~ /^server=/)
				s = substr($i, 8)
		print NR, s
	}'
}
