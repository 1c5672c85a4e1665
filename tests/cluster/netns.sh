# tests/cluster/netns.sh - a cell across "hosts": network namespaces on
# one machine, for the tests of tests/cluster (docs/design.md section 5).
#
# Sourced by tests/cluster/test_*.sh (POSIX sh, set -eu), like
# tests/cell/lib.sh.  cluster_up makes one namespace per host, joined by
# a bridge in a namespace of its own, on the test subnet $NET.0/24, which
# exists only inside this run's namespaces (the root namespace gets no
# address or route on it, so nothing outside this machine is addressed):
#
#	z1 z2 z3	$NET.11-13	a ZooKeeper ensemble, port 2181
#	m1 m2		$NET.21-22	tabletd master (one elected, a standby)
#	s1 .. sN	$NET.31-	tabletd server, --listen on its address
#	c1		$NET.101	clients: tabletctl, the test's writers
#
# The cell's store is a directory under T, one path on this filesystem
# that every namespace reaches.  Every process runs in its host's
# namespace; each tabletd stamps its log lines with the time on its own
# clock (ms since the epoch; one clock for every namespace here), in
# T/logs/NAME.log, followed by "exit STATUS" when it ends.  The EXIT trap
# kills everything the test started, deletes every namespace and removes
# T, even on failure.
# Namespace names are tfsc<pid>-HOST: two tests run side by side, and
# what a run killed with SIGKILL (no trap) leaves is reaped by the next
# one (its writers and prober stop on their own once its shell is gone).
#
# CLUSTER_KEEP=1 keeps T (logs, store, probes) for inspection.
# Skips (77) when not root, without `ip netns`, nft, java or ZooKeeper.
# Needs top_builddir and top_srcdir, as `make check` sets them.

: "${top_builddir:?top_builddir must be set}"
: "${top_srcdir:?top_srcdir must be set}"
TABLETD=$top_builddir/src/tabletd/tabletd
TABLETCTL=$top_builddir/src/ctl/tabletctl
PROBER=$top_srcdir/tests/cluster/prober.py
# The session timeout of tabletd; a server's lease is 0.8 of it.
SESSION_MS=${SESSION_MS:-4000}
NET=10.77.0
P=tfsc$$

skip() {
	echo "SKIP: $*" >&2
	exit 77
}

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

[ "$(id -u)" = 0 ] || skip "not root (network namespaces)"
# Four JVMs and seven daemons per test, for about a minute each: the
# normal build runs them; the sanitizer builds (TEST_SMALL) run the
# cell's one-host fault tests instead, to keep CI within its time.
[ -z "${TEST_SMALL:-}" ] || skip "the multi-host tests run in the normal build"
ip netns list >/dev/null 2>&1 || skip "no ip netns (iproute2)"
command -v nft >/dev/null 2>&1 || skip "no nft (nftables)"
command -v nc >/dev/null 2>&1 || skip "no nc (netcat-openbsd)"
command -v python3 >/dev/null 2>&1 || skip "no python3"
command -v java >/dev/null 2>&1 || skip "no java"
[ -f /usr/share/java/zookeeper.jar ] || skip "no ZooKeeper (zookeeper package)"
[ -x "$TABLETD" ] || skip "tabletd not built"

TSAN_OPTIONS="${TSAN_OPTIONS:-} report_thread_leaks=0"
export TSAN_OPTIONS

. "$top_srcdir/tests/cell/wait.sh"

# The namespaces of runs whose shell is gone (killed with SIGKILL): their
# processes are killed and the namespaces deleted.
netns_reap_stale() {
	for ns in $(ip netns list | awk '{ print $1 }' |
	    grep '^tfsc[0-9][0-9]*-' || :); do
		owner=${ns#tfsc}
		owner=${owner%%-*}
		kill -0 "$owner" 2>/dev/null && continue
		netns_del "$ns"
	done
	for d in "${TMPDIR:-/tmp}"/tabletfs-cluster.*; do
		[ -f "$d/owner" ] || continue
		kill -0 "$(cat "$d/owner")" 2>/dev/null || rm -rf "$d"
	done
}

# Kill what runs in namespace $1 (TERM, then KILL after 3 s) and delete
# it: `ip netns del` alone leaves its processes running.
netns_del() {
	nd_pids=$(ip netns pids "$1" 2>/dev/null || :)
	[ -n "$nd_pids" ] && kill -TERM $nd_pids 2>/dev/null
	for _ in $(seq 30); do
		[ -z "$(ip netns pids "$1" 2>/dev/null || :)" ] && break
		sleep 0.1
	done
	nd_pids=$(ip netns pids "$1" 2>/dev/null || :)
	[ -n "$nd_pids" ] && kill -KILL $nd_pids 2>/dev/null
	ip netns del "$1" 2>/dev/null || :
}

netns_reap_stale
T=$(mktemp -d "${TMPDIR:-/tmp}/tabletfs-cluster.XXXXXX")
mkdir -p "$T/logs"
echo $$ >"$T/owner"
BG_PIDS=""

cluster_cleanup() {
	cc_status=$?
	touch "$T/stop"
	for p in $BG_PIDS; do
		kill -TERM "$p" 2>/dev/null || :
	done
	# Every host at once (each takes a moment to stop), then the hub,
	# whose deletion takes the bridge and every veth with it.
	for ns in $(ip netns list | awk '{ print $1 }' | grep "^$P-" |
	    grep -v -- "-hub\$" || :); do
		netns_del "$ns" &
	done
	wait 2>/dev/null || :
	netns_del "$P-hub"
	if ip netns list | grep -q "^$P-"; then
		echo "FAIL: namespaces left: $(ip netns list | grep "^$P-")" >&2
		cc_status=1
	fi
	if grep -l -e 'WARNING: ThreadSanitizer' -e 'ERROR: AddressSanitizer' \
	    -e 'runtime error:' -e 'ERROR: LeakSanitizer' "$T"/logs/*.log \
	    >"$T/sanitized" 2>/dev/null; then
		echo "FAIL: a sanitizer reported in $(cat "$T/sanitized")" >&2
		cluster_ok=0
		cc_status=1
	fi
	if [ "${cluster_ok:-0}" != 1 ]; then
		for f in "$T"/logs/*.log; do
			[ -f "$f" ] || continue
			echo "---- $f" >&2
			tail -n 15 "$f" >&2
		done
		[ "$cc_status" != 0 ] || cc_status=1
	fi
	if [ -n "${CLUSTER_KEEP:-}" ]; then
		echo "kept $T" >&2
	else
		rm -rf "$T"
	fi
	exit "$cc_status"
}
trap cluster_cleanup EXIT
trap 'exit 1' HUP INT TERM

# The address of host $1.
host_ip() {
	case $1 in
	z[1-3]) echo "$NET.1${1#z}" ;;
	m[1-2]) echo "$NET.2${1#m}" ;;
	s[1-9]) echo "$NET.$((30 + ${1#s}))" ;;
	c[1-9]) echo "$NET.$((100 + ${1#c}))" ;;
	*) fail "no host $1" ;;
	esac
}

# Run a command in host $1's namespace (never in the root namespace: an
# empty host fails instead).  Its network namespace only: `ip netns exec`
# would also give it a mount namespace holding a copy of every mount of
# the moment, and where / is private (here), a FUSE mount that another
# test then unmounts would live on in that copy, its daemon with it,
# until this host's last process exits.
hexec() {
	[ -n "${1:-}" ] || fail "hexec: no host"
	he_ns=$P-$1
	shift
	nsenter --net="/run/netns/$he_ns" -- "$@"
}

# netns_up HOST...: the hub with its bridge, then each host with eth0 on
# the bridge (the hub's end is named after the host).
netns_up() {
	ip netns add "$P-hub"
	ip -n "$P-hub" link add br0 type bridge
	ip -n "$P-hub" link set br0 up
	ip -n "$P-hub" link set lo up
	for h in "$@"; do
		ip netns add "$P-$h"
		ip -n "$P-hub" link add "$h" type veth peer name eth0 \
		    netns "$P-$h"
		ip -n "$P-hub" link set "$h" master br0 up
		ip -n "$P-$h" addr add "$(host_ip "$h")/24" dev eth0
		ip -n "$P-$h" link set eth0 up
		ip -n "$P-$h" link set lo up
	done
}

# The answer of ZooKeeper member $1 (1-3) to the four-letter word $2,
# asked from the client host.
zk_ask() {
	echo "$2" | hexec c1 timeout 2 nc -N "$(host_ip "z$1")" 2181 \
	    2>/dev/null || :
}

# The mode of member $1: leader, follower, or nothing when it does not
# serve.
zk_mode() {
	zk_ask "$1" srvr | sed -n 's/^Mode: //p'
}

# The member that leads, or nothing.
zk_leader() {
	for i in 1 2 3; do
		if [ "$(zk_mode "$i")" = leader ]; then
			echo "$i"
			return
		fi
	done
}

# Wait up to $1 ms until one member leads and two follow.
zk_wait_quorum() {
	zw_end=$(( $(now_ms) + $1 ))
	while :; do
		zw_modes=$(for i in 1 2 3; do zk_mode "$i"; done | sort | tr '\n' ' ')
		[ "$zw_modes" = "follower follower leader " ] && return 0
		[ "$(now_ms)" -lt "$zw_end" ] || return 1
		sleep 0.2
	done
}

# Start ZooKeeper member $1 (1-3) in host z$1 (the recipe's
# /work/shared/recipes/netns.md: tickTime 1000, syncLimit 2).
zk_member_start() {
	zd=$T/zk$1
	if [ ! -f "$zd/zoo.cfg" ]; then
		mkdir -p "$zd/data"
		echo "$1" >"$zd/data/myid"
		cat >"$zd/zoo.cfg" <<EOF
tickTime=1000
initLimit=10
syncLimit=2
dataDir=$zd/data
clientPort=2181
clientPortAddress=$(host_ip "z$1")
admin.enableServer=false
4lw.commands.whitelist=ruok,srvr,stat,mntr,cons
server.1=$(host_ip z1):2888:3888
server.2=$(host_ip z2):2888:3888
server.3=$(host_ip z3):2888:3888
EOF
		cat >"$zd/log4j.properties" <<EOF
log4j.rootLogger=INFO,F
log4j.appender.F=org.apache.log4j.FileAppender
log4j.appender.F.File=$T/logs/zk$1.log
log4j.appender.F.layout=org.apache.log4j.PatternLayout
log4j.appender.F.layout.ConversionPattern=%d{ISO8601} %-5p [%t] %m%n
EOF
	fi
	hexec "z$1" java -Xms32m -Xmx128m -XX:+UseSerialGC \
	    -XX:TieredStopAtLevel=1 -Xss512k -Djava.net.preferIPv4Stack=true \
	    -cp "/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-log4j12.jar:/usr/share/java/log4j-1.2.jar:$zd" \
	    org.apache.zookeeper.server.quorum.QuorumPeerMain "$zd/zoo.cfg" \
	    >"$zd/stdout.log" 2>&1 &
}

# The pid of member $1's java: what runs in its host ($! above is a
# subshell, hexec being a function).
zk_member_pid() {
	ip netns pids "$P-z$1"
}

# The cell's address: every member of the ensemble.
CELL="zk://$(host_ip z1):2181,$(host_ip z2):2181,$(host_ip z3):2181/cell"

# tabletd_start NAME HOST ROLE [ARG...]: tabletd ROLE in HOST, its pid in
# T/NAME.pid, its log in T/logs/NAME.log, each line stamped by tabletd
# with the time on its own clock (--log-time), and "exit STATUS" stamped
# once it has exited; waits until it runs.
tabletd_start() {
	ts_name=$1 ts_host=$2 ts_role=$3
	shift 3
	rm -f "$T/$ts_name.pid"
	( set +e; hexec "$ts_host" "$TABLETD" "$ts_role" "$CELL" \
	    --session-timeout "$SESSION_MS" --pidfile "$T/$ts_name.pid" \
	    --log-time "$@" 2>>"$T/logs/$ts_name.log" >/dev/null
	    ts_status=$?
	    echo "$(now_ms) exit $ts_status" >>"$T/logs/$ts_name.log" ) &
	case $ts_role in
	master) wait_log 15000 "$T/logs/$ts_name.log" "waiting in the election" ;;
	server) wait_log 15000 "$T/logs/$ts_name.log" "listening on" ;;
	esac || fail "$ts_name ($ts_role on $ts_host) did not start"
}

# The pid of tabletd NAME, or nothing once it has exited.
tabletd_pid() {
	tp=$(cat "$T/$1.pid" 2>/dev/null) || return 0
	alive "$tp" && echo "$tp"
	:
}

# The time (ms) stamped on the first line of log NAME matching PATTERN
# after time $3 (default 0), or nothing.  Lines without a stamp (the
# ZooKeeper client's own) are passed over.
log_time() {
	awk -v after="${3:-0}" -v pat="$2" \
	    '$1 ~ /^[0-9]+$/ && $1 >= after && $0 ~ pat { print $1; exit }' \
	    "$T/logs/$1.log"
}

# The time (ms) stamped on the last line of log NAME matching PATTERN,
# or nothing.
log_time_last() {
	awk -v pat="$2" '$1 ~ /^[0-9]+$/ && $0 ~ pat { t = $1 } END { print t }' \
	    "$T/logs/$1.log"
}

ctl() {
	hexec c1 "$TABLETCTL" -s "$CELL" "$@"
}

# The name (s1, s2, ...) of the server that holds the store's lock.
serving_server() {
	ss_pid=$(cat "$T/storage/LOCK" 2>/dev/null) || return 0
	for f in "$T"/s*.pid; do
		[ -f "$f" ] || continue
		if [ "$(cat "$f")" = "$ss_pid" ] && alive "$ss_pid"; then
			basename "$f" .pid
			return 0
		fi
	done
}

# The name (m1, m2) of the live master that was elected last.
elected_master() {
	for m in m1 m2; do
		[ -n "$(tabletd_pid "$m")" ] || continue
		if grep -q "elected master" "$T/logs/$m.log" 2>/dev/null; then
			echo "$m"
		fi
	done | tail -n 1
}

# The masters' options beyond the cell's and the session's (--spread).
MASTER_ARGS=${MASTER_ARGS:-}

# cluster_up N: hosts z1-z3, m1-m2, s1-sN and c1; the ensemble; the
# cell (its store in T/storage) with table t (family f, split at the
# rows CLUSTER_SPLITS names, if any); two masters and N servers, one of
# which serves the store.
cluster_up() {
	cu_t0=$(now_ms)
	cu_hosts="z1 z2 z3 m1 m2 c1"
	for i in $(seq "$1"); do
		cu_hosts="$cu_hosts s$i"
	done
	# shellcheck disable=SC2086
	netns_up $cu_hosts
	for i in 1 2 3; do
		zk_member_start "$i"
	done
	# Three JVMs on a busy machine: starting them once took 25 s here.
	zk_wait_quorum 90000 || {
		for i in 1 2 3; do
			echo "---- zk$i: $(zk_mode "$i")" >&2
			tail -n 5 "$T/zk$i/stdout.log" >&2
		done
		fail "the ZooKeeper ensemble did not form"
	}
	cu_zk=$(now_ms)
	ctl init --storage "$T/storage" >/dev/null ||
	    fail "tabletctl init failed"
	# shellcheck disable=SC2086
	tabletd_start m1 m1 master $MASTER_ARGS
	# shellcheck disable=SC2086
	tabletd_start m2 m2 master $MASTER_ARGS
	for i in $(seq "$1"); do
		tabletd_start "s$i" "s$i" server --listen "$(host_ip "s$i"):7000"
	done
	ctl createtable t families=f ${CLUSTER_SPLITS:+splits=$CLUSTER_SPLITS} ||
	    fail "createtable failed"
	[ -n "$(serving_server)" ] || fail "no server holds the store"
	echo "cluster: ${cu_hosts}; ensemble in $((cu_zk - cu_t0)) ms," \
	    "serving in $(( $(now_ms) - cu_t0 )) ms; $CELL, session $SESSION_MS ms"
}

# partition HOST PEER...: drop every packet between HOST and the PEERs,
# by nft rules in HOST's namespace (table inet part, both directions);
# heal HOST removes them.
partition() {
	pa_host=$1
	shift
	pa_set=""
	for peer in "$@"; do
		pa_set="$pa_set${pa_set:+, }$(host_ip "$peer")"
	done
	hexec "$pa_host" nft -f - <<EOF
table inet part {
	chain input {
		type filter hook input priority 0; policy accept;
		ip saddr { $pa_set } drop
	}
	chain output {
		type filter hook output priority 0; policy accept;
		ip daddr { $pa_set } drop
	}
}
EOF
}

heal() {
	hexec "$1" nft delete table inet part
}

# A writer loop on the client host, through the client library: writer N
# sets rows wN-1, wN-2, ... until T/stop exists, and appends each
# acknowledged one with its value and the time (ms) to T/acked.N.
writer() {
	n=0
	: >"$T/acked.$1"
	while [ ! -e "$T/stop" ] && kill -0 $$ 2>/dev/null; do
		n=$((n + 1))
		if ctl set t "w$1-$n" "f:q=v$1-$n" 2>>"$T/writer.err"; then
			printf 'w%s-%s\tv%s-%s\t%s\n' "$1" "$n" "$1" "$n" \
			    "$(now_ms)" >>"$T/acked.$1"
		fi
	done
}

# A reader loop on the client host, through the client library: reads
# back the last write that writer 1 had acknowledged, until T/stop
# exists, and appends to T/reads the time (ms) the read began, the time
# it ended and "ok", "failed" (an error: the cell did not answer in
# time) or "wrong" (an answer without the acknowledged value).
reader() {
	while [ ! -e "$T/stop" ] && kill -0 $$ 2>/dev/null; do
		rd_last=$(tail -n 1 "$T/acked.1" 2>/dev/null || :)
		if [ -z "$rd_last" ]; then
			sleep 0.1
			continue
		fi
		rd_row=$(echo "$rd_last" | cut -f 1)
		rd_value=$(echo "$rd_last" | cut -f 2)
		rd_t=$(now_ms)
		if rd_out=$(ctl lookup t "$rd_row" 2>>"$T/reader.err"); then
			case $rd_out in
			*"\"$rd_value\""*) rd_what=ok ;;
			*) rd_what=wrong ;;
			esac
		else
			rd_what=failed
		fi
		printf '%s\t%s\t%s\t%s\n' "$rd_t" "$(now_ms)" "$rd_what" \
		    "$rd_row" >>"$T/reads"
	done
}

# Start the reader in the background.
reader_start() {
	reader &
	BG_PIDS="$BG_PIDS $!"
}

# The reads that began from time $1 to time $2 with outcome $3.
reads_count() {
	awk -F '\t' -v a="$1" -v b="$2" -v w="$3" \
	    '$1 >= a && $1 <= b && $3 == w' "$T/reads" 2>/dev/null | wc -l
}

# Start $1 writers in the background.
writers_start() {
	for i in $(seq "$1"); do
		writer "$i" &
		BG_PIDS="$BG_PIDS $!"
	done
}

# Stop the writers and the prober and wait for them.
background_stop() {
	touch "$T/stop"
	for p in $BG_PIDS; do
		wait "$p" 2>/dev/null || :
	done
	BG_PIDS=""
}

# The prober on the client host: a write to every server in turn, each
# recorded in T/probes with the server's answer and the times (prober.py;
# its rows begin with PROBER_PREFIX, "p" by default).
prober_start() {
	pr_addrs=""
	for s in "$@"; do
		pr_addrs="$pr_addrs $(host_ip "$s"):7000"
	done
	# shellcheck disable=SC2086
	hexec c1 env RPC_SECRET_FILE="$T/storage/secret" \
	    PROBER_PREFIX="${PROBER_PREFIX:-p}" \
	    python3 "$PROBER" run "$T/probes" "$T/stop" $$ t $pr_addrs \
	    2>>"$T/logs/prober.log" &
	BG_PIDS="$BG_PIDS $!"
}

# Wait up to 30 s until the prober has a write acknowledged by server $1
# (a host name), and every writer one.
ready_wait() {
	rw_end=$(( $(now_ms) + 30000 ))
	until awk -F '\t' -v s="$(host_ip "$1"):7000" \
	    '$1 == s && $4 == "0" { ok = 1 } END { exit !ok }' \
	    "$T/probes" 2>/dev/null &&
	    ! wc -l "$T"/acked.* 2>/dev/null | awk '$1 == 0' | grep -q .; do
		[ "$(now_ms)" -lt "$rw_end" ] ||
		    fail "the prober or a writer did not get going"
		sleep 0.1
	done
}

# The number of acknowledged writes so far (writers only).
acked_count() {
	cat "$T"/acked.* 2>/dev/null | wc -l
}

# The longest time (ms) between two acknowledged writers' writes, over
# every writer, from time $1 on.
ack_max_gap() {
	cut -f 3 "$T"/acked.* | sort -n |
	    awk -v from="${1:-0}" '$1 >= from { if (prev && $1 - prev > g) g = $1 - prev; prev = $1 }
		END { print g + 0 }'
}

# Every acknowledged write (the writers' and the prober's) must be in
# table t: fails naming the missing ones.  Prints how many there were.
check_acked() {
	{
		cut -f 1,2 "$T"/acked.*
		[ -f "$T/probes" ] && python3 "$PROBER" acked "$T/probes"
	} | sort >"$T/acked"
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

# The tabletd processes that supervise() keeps running (a test sets it).
DAEMONS=${DAEMONS:-}
restarts=0

# Start again every tabletd of DAEMONS that has exited, as a supervisor
# would; counts them in restarts.
supervise() {
	for d in $DAEMONS; do
		[ -n "$(tabletd_pid "$d")" ] && continue
		case $d in
		m*)
			# shellcheck disable=SC2086
			tabletd_start "$d" "$d" master $MASTER_ARGS ;;
		s*) tabletd_start "$d" "$d" server --listen "$(host_ip "$d"):7000" ;;
		esac
		restarts=$((restarts + 1))
	done
}

# Supervise for $1 ms.
settle() {
	se_end=$(( $(now_ms) + $1 ))
	while [ "$(now_ms)" -lt "$se_end" ]; do
		supervise
		sleep 0.1
	done
}

# The tabletd of DAEMONS that exited from time $1 on: "NAME (status S)
# +MS ms; ..." (MS after $1), or nothing.
exits_since() {
	for d in $DAEMONS; do
		awk -v a="$1" -v d="$d" '$1 >= a && $2 == "exit" {
		    printf "%s (status %s) +%d ms; ", d, $3, $1 - a }' \
		    "$T/logs/$d.log"
	done
}
