#!/bin/sh
# Clock skew between the servers of a cell (issue 28): server stamps of
# one cell strictly increase, whatever the servers' clocks say.  A
# server whose clock runs 30 s ahead (libfaketime, realtime only) serves
# and stamps writes; it is killed (-9), and a server with the true clock,
# 30 s behind, takes the store over and stamps more.  Proves: every
# stamp the second gives is above every stamp the first gave, so that
# each row's latest version is its last write; in write order the stamps
# read back strictly increase.  Skips (77) without libfaketime, and in
# the instrumented builds (a preloaded library before their runtimes).
set -eu
. "$(dirname "$0")/lib.sh"

cell_faketime_needs
AHEAD_S=30

cell_start 1
ctl createtable t families=f
first=$(cell_serving_pid)
[ -n "$first" ] || fail "no server serves"

# The server ahead, started while the first serves: it stands by.
cell_server_start_ahead ahead "$AHEAD_S"
ahead=$(cat "$C/server-ahead.pid")

# Kill server $1 and wait until another one serves and answers.
handover() {
	kill -9 "$1"
	ho_end=$(( $(now_ms) + LIMIT ))
	until [ -n "$(cell_serving_pid)" ] &&
	    [ "$(cell_serving_pid)" != "$1" ] && ctl ls >/dev/null 2>&1; do
		[ "$(now_ms)" -lt "$ho_end" ] ||
		    fail "no server took over from $1"
		sleep 0.1
	done
}

# Twenty server-stamped writes of rows $1-1..$1-20, and as many versions
# of column r of row x, with values $2-1..$2-20.
write_twenty() {
	wt_i=1
	while [ $wt_i -le 20 ]; do
		ctl set t "$1$wt_i" "f:q=$2-$wt_i" >/dev/null
		ctl set t x "f:r=$2-$wt_i" >/dev/null
		wt_i=$((wt_i + 1))
	done
}

# Hand the store to the server ahead (the only other), which stamps 30 s
# ahead; then to one behind it.
handover "$first"
[ "$(cell_serving_pid)" = "$ahead" ] || fail "the server ahead does not serve"
write_twenty a ahead
cell_server_start behind
handover "$ahead"
write_twenty b behind

# export: row, family, qualifier, timestamp, value.
ctl export t >"$T/export"
max_ahead=$(awk -F '\t' '$5 ~ /^ahead-/ && $4 > m { m = $4 } END { print m }' \
    "$T/export")
min_behind=$(awk -F '\t' '$5 ~ /^behind-/ && (m == "" || $4 < m) { m = $4 }
    END { print m }' "$T/export")
now_us=$(( $(now_ms) * 1000 ))
echo "# newest stamp ahead $max_ahead, oldest behind $min_behind, clock $now_us"
[ -n "$max_ahead" ] && [ -n "$min_behind" ] || fail "writes missing"
[ "$max_ahead" -gt $((now_us + (AHEAD_S - 10) * 1000000)) ] ||
    fail "the server ahead did not stamp ahead ($max_ahead)"
[ "$min_behind" -gt "$max_ahead" ] ||
    fail "a stamp after the takeover ($min_behind) is not above one before \
it ($max_ahead)"
# Row x: its 40 versions in the order written, newest first.
awk -F '\t' '$1 == "x" { print $4 "\t" $5 }' "$T/export" | sort -rn |
    cut -f 2 >"$T/x"
i=20
: >"$T/x.want"
while [ $i -ge 1 ]; do
	echo "behind-$i" >>"$T/x.want"
	i=$((i - 1))
done
i=20
while [ $i -ge 1 ]; do
	echo "ahead-$i" >>"$T/x.want"
	i=$((i - 1))
done
cmp -s "$T/x" "$T/x.want" || {
	diff "$T/x.want" "$T/x" | head >&2
	fail "row x's versions are not in the order written"
}
[ "$(ctl lookup t x cells-per-column=1 | grep -c "behind-20")" -eq 1 ] ||
    fail "row x's latest is not its last write"
echo "ok: stamps increase across a takeover from a server 30 s ahead"
cell_ok=1
