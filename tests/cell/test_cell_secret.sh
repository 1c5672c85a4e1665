#!/bin/sh
# A cell's RPC connections are authenticated by the cell's secret
# (docs/design.md section 5, tabletfs(5) RPC): tabletctl init makes
# STORAGE/secret, 32 bytes, mode 0600, and a cell with it works; a client
# that cannot read the secret (user nobody, with the storage directory
# otherwise open to it) fails with one line naming the file, and a
# non-zero exit; raw TCP connections that speak version 1's preamble or
# prove another secret, each with a request after it, are closed with
# nothing sent back and nothing run, and the server serves on.  A cell
# made before secrets (one whose secret is gone): its servers, masters
# and clients refuse to start, saying how to make one; tabletctl init
# --secret makes it, once, and the cell then starts and serves.
set -eu
SESSION_MS=${SESSION_MS:-10000}
. "$(dirname "$0")/lib.sh"

cell_start 2
secret=$C/storage/secret
[ -f "$secret" ] || fail "init made no $secret"
[ "$(stat -c %a "$secret")" = 600 ] ||
    fail "$secret has mode $(stat -c %a "$secret"), not 600"
[ "$(stat -c %s "$secret")" = 32 ] ||
    fail "$secret is $(stat -c %s "$secret") bytes, not 32"
ctl createtable t families=f >/dev/null || fail "createtable"
ctl set t r f:q=v || fail "set"
ctl lookup t r | grep -q '"v"' || fail "the cell does not read back"
echo "a cell with its secret serves"

# A client that cannot read the secret.  The directories on the way are
# opened to everyone, so that only the secret's own mode keeps nobody out.
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null 2>&1 &&
    id nobody >/dev/null 2>&1 &&
    setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups \
    "$TABLETCTL" help >/dev/null 2>&1; then
	chmod 755 "$T" "$C" "$C/storage"
	st=0
	setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups \
	    "$TABLETCTL" -s "$CELL" ls >"$T/nobody.out" 2>"$T/nobody.err" ||
	    st=$?
	cat "$T/nobody.err"
	[ "$st" -ne 0 ] || fail "user nobody listed the cell"
	grep -q "cannot read the cell's secret at $secret: Permission denied" \
	    "$T/nobody.err" || fail "no clear message for user nobody"
	[ "$(wc -l <"$T/nobody.err")" -eq 1 ] ||
	    fail "more than one line for user nobody"
	[ ! -s "$T/nobody.out" ] || fail "user nobody got output"
	echo "a client that cannot read the secret: refused, exit $st"
else
	echo "# not root, or no setpriv, or nobody cannot run tabletctl" \
	    "here: the unreadable secret is not tried"
fi

# Raw connections to the serving server: version 1's preamble and a
# request; a proof of another secret and a request.  Each must be closed
# with no byte sent back past the challenge, the request not run.
server=$(cell_serving_pid)
address=$(cell_server_address "$server")
[ -n "$address" ] || fail "no address for the serving server $server"
RPC_SECRET_FILE=$secret python3 - "$address" <<'PY' || fail "raw clients"
import os, socket, sys
sys.path.insert(0, os.path.join(os.environ["top_srcdir"], "tests", "cell"))
from rpcwire import (LABEL_CLIENT, NONCE, PREAMBLE, PREAMBLE_V1, PROOF,
                     frame, handshake, proof, recv_exact, secret)

TABLE_LIST = 3
host, port = sys.argv[1].rsplit(":", 1)


def rest(s):
    """Every byte the server sends until it closes (b"" if it resets)."""
    got = b""
    try:
        while True:
            chunk = s.recv(4096)
            if not chunk:
                return got
            got += chunk
    except ConnectionResetError:
        return got


def conn():
    return socket.create_connection((host, int(port)), timeout=15)


s = conn()
s.sendall(PREAMBLE_V1 + frame(1, TABLE_LIST))
got = rest(s)
print("version 1's preamble and a request: closed, %d bytes back" % len(got))
if got:
    sys.exit("version 1's preamble got %r" % got)

s = conn()
cn = os.urandom(NONCE)
s.sendall(PREAMBLE + cn)
challenge = recv_exact(s, len(PREAMBLE) + NONCE + PROOF)
sn = challenge[len(PREAMBLE):len(PREAMBLE) + NONCE]
s.sendall(proof(os.urandom(32), LABEL_CLIENT, cn, sn) + frame(1, TABLE_LIST))
got = rest(s)
print("another secret's proof and a request: closed, %d bytes back" %
      len(got))
if got:
    sys.exit("another secret's proof got %r" % got)

s = conn()
try:
    handshake(s, os.urandom(32))
    sys.exit("a client of another secret was welcome")
except ConnectionError as e:
    print("a client of another secret: %s" % e)
s.close()

s = conn()
handshake(s, secret())
s.sendall(frame(1, TABLE_LIST))
if len(recv_exact(s, 28)) != 28:
    sys.exit("the cell's secret by hand is not answered")
print("the cell's secret by hand: answered")
PY
alive "$server" && [ "$(cell_serving_pid)" = "$server" ] ||
    fail "the serving server did not survive"
grep -q "refused: wrong preamble" "$C"/logs/server-*.log ||
    fail "the server did not log the wrong preamble"
ctl lookup t r | grep -q '"v"' || fail "the cell stopped serving"

# A cell made before secrets: a second cell in the same ZooKeeper, its
# secret removed.
old=${CELL%/*}/old
"$TABLETCTL" -s "$old" init --storage "$T/old" || fail "init $old"
rm "$T/old/secret"
for role in server master; do
	st=0
	"$TABLETD" "$role" "$old" --session-timeout "$SESSION_MS" \
	    2>"$T/old-$role.err" || st=$?
	cat "$T/old-$role.err"
	[ "$st" -ne 0 ] || fail "a $role of a cell without a secret ran"
	grep -q "cannot read the cell's secret at $T/old/secret: .*init --secret" \
	    "$T/old-$role.err" || fail "the $role did not say what to do"
done
st=0
"$TABLETCTL" -s "$old" ls 2>"$T/old-ctl.err" || st=$?
cat "$T/old-ctl.err"
[ "$st" -ne 0 ] || fail "a client of a cell without a secret ran"
grep -q "init --secret" "$T/old-ctl.err" ||
    fail "the client did not say what to do"
"$TABLETCTL" -s "$old" init --secret || fail "init --secret"
[ "$(stat -c %a "$T/old/secret")" = 600 ] || fail "init --secret: mode"
! "$TABLETCTL" -s "$old" init --secret 2>"$T/again.err" ||
    fail "init --secret replaced a secret"
grep -q "exists already" "$T/again.err" || fail "init --secret again: $(cat "$T/again.err")"
"$TABLETD" master "$old" --session-timeout "$SESSION_MS" --daemon \
    --pidfile "$C/master-old.pid" 2>>"$C/logs/master-old.log" ||
    fail "the old cell's master did not start"
"$TABLETD" server "$old" --session-timeout "$SESSION_MS" --daemon \
    --pidfile "$C/server-old.pid" 2>>"$C/logs/server-old.log" ||
    fail "the old cell's server did not start"
"$TABLETCTL" -s "$old" createtable u families=f >/dev/null &&
    "$TABLETCTL" -s "$old" ls | grep -q '^u$' ||
    fail "the old cell does not serve with its new secret"
echo "a cell made before secrets: refused, then served after init --secret"
cell_ok=1
