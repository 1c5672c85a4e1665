#!/bin/sh
# Bad input to the serving tablet server, from a raw TCP client
# (tests/cell/rawclient.py, which writes the frames of src/rpc/format.h
# by hand): a wrong preamble, a bad crc, a frame length below the
# header's, a frame declared over 300 MiB, garbage, an unknown method,
# requests naming an unknown table, payloads that do not unpack, a SERVE
# naming another store (and, to a server that serves nothing, ones
# naming no store and a store that is not the cell's: EPERM), requests
# dropped before their replies, and clients that stall (no preamble,
# half a frame, a declared 200 MiB frame).  Proves: each gets an error
# status (the connection then still answers) or a closed connection,
# tabletctl keeps working meanwhile, the client without a preamble is
# cut off (the server's 10 s preamble timeout, so the test takes about
# 20 s; it has no long form), the same server still serves at the end,
# and writes acknowledged before it all read back.
set -eu
. "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null 2>&1 || skip "no python3"

cell_start 3
ctl createtable t families=f
for i in $(seq 10); do
	ctl set t "before-$i" "f:q=v$i"
done
server=$(cell_serving_pid)
address=$(cell_server_address "$server")
[ -n "$address" ] || fail "no address for the serving server $server"
idle=""
for f in "$C"/server-*.pid; do
	p=$(cat "$f")
	[ "$p" = "$server" ] || idle=$(cell_server_address "$p")
done
# A store of its own that no SERVE may make a server of the cell open.
"$TABLETCTL" -s "$T/other" init || fail "tabletctl init $T/other"
RPC_SECRET_FILE=$C/storage/secret python3 \
    "$top_srcdir/tests/cell/rawclient.py" "$address" "$CELL" \
    "$TABLETCTL" "$idle" "$T/other" || fail "bad input to $address"
[ "$(cell_serving_pid)" = "$server" ] && alive "$server" ||
    fail "the serving server $server did not survive"
for i in $(seq 10); do
	ctl lookup t "before-$i" | grep -q "\"v$i\"" ||
	    fail "before-$i does not read back"
done
echo "rpc log lines of the server:"
grep -h "rpc server" "$C"/logs/server-*.log | sed 's/^/    /' | head -20
cell_ok=1
