#!/bin/sh
# test_fs_security.sh - the threat model of README, SECURITY, checked as
# another user (nobody, through setpriv; skipped, 77, unless root):
#   - without allow_other the mount is private: nobody cannot enter it;
#   - the kernel checks permissions (default_permissions, always) against
#     the tables' and families' owners and modes: with allow_other nobody
#     reads a root table of mode 0755, but cannot write, make or remove
#     anything;
#   - without allow_other the control socket is mode 0600, and even
#     opened to everyone it refuses a peer with another uid, who changes
#     nothing; with allow_other it is 0666 and serves nobody as the
#     modes allow: reads, and no writes (test_fs_access.sh has more);
#   - names made of dots and escaped slashes stay keys: nothing appears
#     outside STORE; tabletctl refuses table names with '/' or '..', and
#     oversized rows and qualifiers;
#   - oversized or malformed control-socket requests are refused and the
#     daemon goes on serving.
set -eu
. "${top_srcdir:?}/tests/fs/lib.sh"

[ "$(id -u)" -eq 0 ] || skip "not root: cannot act as another user"
command -v setpriv >/dev/null 2>&1 || skip "no setpriv(1)"
id nobody >/dev/null 2>&1 || skip "no user nobody"
as_nobody() {
	setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups "$@"
}
# nobody must be able to reach the mount point and the store.
chmod 0755 "$T"

fs_webtable
fs_mount
R=$M/webtable/r/anchor
mkdir -p "$R/q"
echo mine >"$R/q/1"

# Private without allow_other.
expect_fail "Permission denied" as_nobody ls "$M/webtable"
expect_fail "Permission denied" as_nobody cat "$R/q/1"

# The socket of a private mount: 0600; opened to all, it still refuses
# another uid.
check_eq "socket mode" "$(stat -c %a "$S/tabletfs.sock")" 600
chmod 0755 "$S"
if as_nobody "$TABLETCTL" -s "$S" set webtable evil anchor:x=1 \
    >/dev/null 2>&1; then
	fail "nobody's tabletctl set succeeded through a 0600 socket"
fi
chmod 0666 "$S/tabletfs.sock"
if as_nobody "$TABLETCTL" -s "$S" set webtable evil anchor:x=1 \
    >"$T/out" 2>&1; then
	fail "the daemon ran a command from another uid"
fi
expect_fail "not found" ctl lookup webtable evil
check_eq "socket still serves its owner" \
    "$(ctl lookup webtable r | grep -c mine)" 1

# Oversized and malformed requests: refused, the daemon carries on.
if command -v python3 >/dev/null 2>&1; then
	for hex in 544643310001000000 5446433100100000 \
	    54464331010000000000ff7f 5446433101000000ffffffff 00000000; do
		python3 - "$S/tabletfs.sock" "$hex" >"$T/resp" <<'PY' || :
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.sendall(bytes.fromhex(sys.argv[2]))
s.shutdown(socket.SHUT_WR)
data = b""
while True:
    b = s.recv(4096)
    if not b:
        break
    data += b
sys.stdout.write(data[12:].decode(errors="replace"))
PY
		grep -q "malformed request" "$T/resp" ||
		    fail "request $hex: $(cat "$T/resp")"
	done
	check_eq "serving after bad requests" \
	    "$(ctl lookup webtable r | grep -c mine)" 1
fi

# Names stay keys: dots and escaped slashes never become paths.
touch "$T/marker"
for name in '%2E%2E' '%2E%2E%2F%2E%2E%2Fescape' '%2E%2Fx' 'a%2F..%2Fb'; do
	mkdir -p "$M/webtable/$name/anchor/q"
	echo x >"$M/webtable/$name/anchor/q/latest"
	[ -f "$M/webtable/$name/anchor/q/latest" ] || fail "row $name"
done
check_eq "escaped rows listed" \
    "$(ls "$M/webtable" | grep -c -e '^%2E' -e '%2F')" 4
outside=$(find "$T" -newer "$T/marker" ! -path "$S" ! -path "$S/*" \
    ! -path "$M" ! -path "$M/*" ! -path "$T" -print)
[ -z "$outside" ] || fail "files outside the store: $outside"
expect_fail "bad table name" ctl createtable ../../evil
expect_fail "bad table name" ctl createtable a/b
expect_fail "row key of 65537 bytes" ctl set webtable \
    "$(head -c 65537 /dev/zero | tr '\0' r)" anchor:q=1
expect_fail "qualifier of 16385 bytes" ctl set webtable r \
    "anchor:$(head -c 16385 /dev/zero | tr '\0' q)=1"
fs_unmount

# allow_other: default_permissions, so the mode bits hold.
fs_mount -o allow_other
grep " $M fuse" /proc/mounts | grep -q default_permissions ||
    fail "allow_other without default_permissions: $(grep " $M " /proc/mounts)"
# The socket serves nobody now, as the modes allow.
check_eq "socket mode with allow_other" "$(stat -c %a "$S/tabletfs.sock")" \
    666
check_eq "nobody reads through the socket" \
    "$(as_nobody "$TABLETCTL" -s "$S" lookup webtable r | grep -c mine)" 1
expect_fail "webtable: Permission denied" as_nobody "$TABLETCTL" -s "$S" \
    set webtable evil anchor:x=1
expect_fail "Permission denied" as_nobody "$TABLETCTL" -s "$S" \
    deletetable webtable
expect_fail "not found" ctl lookup webtable evil
check_eq "nobody reads" "$(as_nobody cat "$R/q/1")" mine
expect_fail "Permission denied" as_nobody sh -c "echo evil >'$R/q/1'"
expect_fail "Permission denied" as_nobody sh -c "echo evil >'$R/q/latest'"
expect_fail "Permission denied" as_nobody mkdir -p "$M/webtable/n/anchor/q"
expect_fail "Permission denied" as_nobody rm "$R/q/1"
expect_fail "Permission denied" as_nobody mv "$R/q/1" "$R/q/2"
check_eq "unchanged" "$(cat "$R/q/1")" mine
check_eq "one version" "$(ls "$R/q")" 1
