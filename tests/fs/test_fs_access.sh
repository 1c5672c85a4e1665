#!/bin/sh
# test_fs_access.sh - access control at table and family level (issue 29,
# item 4; tabletfs(1) "Permissions"), with two real users through a real
# mount opened to others (-o allow_other) and its control socket:
#   - table t and its families belong to ONE (nobody); family sec is
#     0700, readable by ONE alone; family pub 0755;
#   - OTHER (daemon, or a user made for the test) is refused, with
#     "Permission denied", every path to sec: ls, cat, echo >, echo >>,
#     rm, mv, mkdir, rmdir, rm -r, and tabletctl lookup, read, set,
#     deleterow over the socket; chmod and chown by a non-owner are
#     "Operation not permitted" (chmod(2), chown(2));
#   - ONE may do all of it; OTHER reads pub but writes nothing, and
#     cannot rename sec away even in a row writable by all;
#   - nothing a refused attempt touched changed;
#   - chmod and chown through the mount and through tabletctl show at
#     once in ls -l and tabletctl status; a supplementary group counts,
#     on the mount and on the socket.
# On a cell (tests/cell/test_cell_fs.sh) the mount's part runs as it is;
# there is no control socket, and a change made by another client (a
# tabletctl of the cell) shows within the caches' two seconds.
set -eu
. "${top_srcdir:?}/tests/fs/lib.sh"

[ "$(id -u)" -eq 0 ] || skip "not root: cannot act as other users"
command -v setpriv >/dev/null 2>&1 || skip "no setpriv(1)"
id nobody >/dev/null 2>&1 || skip "no user nobody"
ONE=nobody
OTHER=daemon
if ! id "$OTHER" >/dev/null 2>&1; then
	OTHER=tabletfs-test
	id "$OTHER" >/dev/null 2>&1 || useradd -r -M "$OTHER" 2>/dev/null ||
	    skip "no second user and useradd failed"
fi
ONE_UID=$(id -u $ONE) ONE_GID=$(id -g $ONE)
OTHER_UID=$(id -u $OTHER) OTHER_GID=$(id -g $OTHER)
# A group of no one's, given to OTHER as a supplementary group.
SUPP=4242
as() {
	who=$1
	shift
	setpriv --reuid="$who" --regid="$(id -g "$who")" --clear-groups "$@"
}
as_one() { as $ONE "$@"; }
as_other() { as $OTHER "$@"; }
as_other_supp() {
	setpriv --reuid=$OTHER --regid=$OTHER_GID --groups=$SUPP "$@"
}
denied() { expect_fail "Permission denied" "$@"; }
# Only where a daemon serves a control socket (not on a cell).
on_socket() {
	[ -n "$CELL" ] || "$@"
}
# After a change made with tabletctl: on a cell, by another client of it,
# which the mount sees once its caches (a second each) have run out.
settle() {
	[ -z "$CELL" ] || sleep 2.2
}
not_permitted() { expect_fail "Operation not permitted" "$@"; }
# Both users reach the mount point, the store and its socket.
chmod 0755 "$T"

ctl init
on_socket chmod 0755 "$S"
ctl createtable t families=pub,sec
ctl chown $ONE t
ctl chown $ONE:$ONE_GID t:pub
ctl chown $ONE:$ONE_GID t:sec
ctl chmod 0700 t:sec
fs_mount -o allow_other
on_socket check_eq "socket mode with allow_other" \
    "$(stat -c %a "$S/tabletfs.sock" 2>/dev/null)" 666
R=$M/t/r
as_one mkdir -p "$R/pub/q" "$R/sec/q"
as_one sh -c "echo open >'$R/pub/q/latest'"
as_one sh -c "echo secret >'$R/sec/q/latest'"
v=$(ls "$R/sec/q" | head -1)
[ -n "$v" ] || fail "no version in sec"

# What each presents: ls -ln and status.
check_eq "table dir" "$(stat -c '%a %u %g' "$M/t")" "755 $ONE_UID 0"
check_eq "row dir" "$(stat -c '%a %u %g' "$R")" "755 $ONE_UID 0"
check_eq "sec dir" "$(stat -c '%a %u %g' "$R/sec")" "700 $ONE_UID $ONE_GID"
check_eq "sec column" "$(stat -c '%a' "$R/sec/q")" 700
check_eq "sec version" "$(stat -c '%a %u' "$R/sec/q/$v")" "600 $ONE_UID"
check_eq "pub version" "$(stat -c '%a' "$R/pub/q/latest")" 644
check_eq ".schema" "$(stat -c '%a %u' "$M/t/.schema")" "444 $ONE_UID"
ctl status t >"$T/status"
grep -q "^access  *family sec uid=$ONE_UID gid=$ONE_GID mode=0700$" \
    "$T/status" || fail "status t: $(cat "$T/status")"
grep -q "^access family sec uid=$ONE_UID gid=$ONE_GID mode=0700$" \
    "$M/t/.schema" || fail ".schema: $(cat "$M/t/.schema")"

# OTHER: every path to sec refused.
denied as_other ls "$R/sec"
denied as_other cat "$R/sec/q/latest"
denied as_other cat "$R/sec/q/$v"
denied as_other sh -c "echo evil >'$R/sec/q/latest'"
denied as_other sh -c "echo evil >>'$R/sec/q/latest'"
denied as_other sh -c "echo evil >'$R/sec/q/1'"
denied as_other rm "$R/sec/q/$v"
denied as_other rm -f "$R/sec/q/latest"
denied as_other mv "$R/sec/q/$v" "$R/sec/q/1"
denied as_other mv "$R/sec/q" "$R/pub/stolen"
denied as_other mkdir "$R/sec/new"
denied as_other mkdir -p "$M/t/r2/pub/q"
denied as_other rmdir "$R/sec/q"
denied as_other rm -r "$R/sec"
denied as_other rm -r "$R"
not_permitted as_other chmod 0777 "$R/sec"
not_permitted as_other chmod 0777 "$M/t"
not_permitted as_other chown $OTHER "$R/sec"
not_permitted as_other chgrp $OTHER_GID "$R/pub"
on_socket denied as_other "$TABLETCTL" -s "$S" lookup t r
on_socket denied as_other "$TABLETCTL" -s "$S" lookup t r columns=sec
on_socket denied as_other "$TABLETCTL" -s "$S" read t
on_socket denied as_other "$TABLETCTL" -s "$S" export t
# tablets of every table: a table OTHER may not read refused, the others
# listed, exit 1.
if [ -z "$CELL" ]; then
	ctl createtable closed
	ctl chmod 0700 closed
	if as_other "$TABLETCTL" -s "$S" tablets >"$T/out" 2>"$T/err"; then
		fail "tablets of a table other may not read exits 0"
	fi
	grep -q "closed: Permission denied" "$T/err" || fail "$(cat "$T/err")"
	grep -q "^t	" "$T/out" || fail "tablets skipped t: $(cat "$T/out")"
	ctl deletetable closed
fi
on_socket denied as_other "$TABLETCTL" -s "$S" set t r sec:q=evil
on_socket denied as_other "$TABLETCTL" -s "$S" set t r pub:q=evil
on_socket denied as_other "$TABLETCTL" -s "$S" deleterow t r
on_socket denied as_other "$TABLETCTL" -s "$S" deletecolumn t r sec q
on_socket denied as_other "$TABLETCTL" -s "$S" deletefamily t sec
on_socket denied as_other "$TABLETCTL" -s "$S" deletetable t
on_socket denied as_other "$TABLETCTL" -s "$S" createtable mine
# Another user's import: from standard input only (the daemon would
# open FILE with its own rights).
echo "secret file" >"$T/private"
chmod 0600 "$T/private"
on_socket denied as_one "$TABLETCTL" -s "$S" import t "$T/private"
on_socket not_permitted as_other "$TABLETCTL" -s "$S" chmod 0777 t:sec
on_socket not_permitted as_other "$TABLETCTL" -s "$S" chown $OTHER t
# One line, naming the table and family, and a failing exit status.
if [ -z "$CELL" ]; then
	if as_other "$TABLETCTL" -s "$S" lookup t r columns=sec >"$T/out" \
	    2>&1; then
		fail "a refused lookup exits 0"
	fi
	check_eq "one line: $(cat "$T/out")" "$(wc -l <"$T/out")" 1
	grep -q "t:sec: Permission denied" "$T/out" || fail "$(cat "$T/out")"
fi
# A query reads every family: refused too.
denied as_other ls "$M/t/.filter/@value=secret.*"
denied as_other cat "$M/t/.filter/r"

# A row writable by all: the kernel lets OTHER rename sec's directory
# in it, which would move sec's cells into a family OTHER reads; the
# daemon refuses (it needs r and w on sec).
ctl chmod 0777 t
ctl createfamily t drop
settle
check_eq "a family made now takes the table's mode" \
    "$(ctl status t | sed -n 's/^access  *family drop .*mode=//p')" 0777
denied as_other mv "$R/sec" "$R/drop"
# Nor may a writer who cannot read a family move its cells out of it.
ctl chmod 0733 t:sec
settle
as_other mkdir -p "$R/drop/q"
denied as_other mv "$R/sec/q/$v" "$R/drop/q/1"
denied as_other mv "$R/sec/q" "$R/drop/q2"
ctl chmod 0700 t:sec
ctl chmod 0755 t
settle

# Nothing changed.
check_eq "sec unchanged" "$(cat "$R/sec/q/latest")" secret
check_eq "sec versions" "$(ls "$R/sec/q")" "$v"
check_eq "pub unchanged" "$(cat "$R/pub/q/latest")" open
check_eq "no row r2" "$(ls "$M/t")" r
ctl status t >"$T/status"
grep -q "^access  *family sec uid=$ONE_UID gid=$ONE_GID mode=0700$" \
    "$T/status" || fail "access changed: $(cat "$T/status")"

# OTHER reads what others may: pub.
check_eq "other reads pub" "$(as_other cat "$R/pub/q/latest")" open
check_eq "other lists the row" "$(as_other ls "$R" | tr '\n' ' ')" "drop pub sec "
[ -n "$CELL" ] ||
    as_other "$TABLETCTL" -s "$S" lookup t r columns=pub | grep -q open ||
    fail "other's lookup of pub"

# ONE may do it all.
check_eq "one reads sec" "$(as_one cat "$R/sec/q/latest")" secret
[ -n "$CELL" ] || as_one "$TABLETCTL" -s "$S" lookup t r | grep -q secret ||
    fail "one's lookup of every family"
as_one sh -c "echo more >>'$R/sec/q/latest'"
check_eq "one appends" "$(as_one cat "$R/sec/q/latest")" "secret
more"
as_one mkdir "$R/sec/q2"
as_one sh -c "echo x >'$R/sec/q2/latest'"
as_one mv "$R/sec/q2" "$R/sec/q3"
as_one rm -r "$R/sec/q3"
on_socket as_one "$TABLETCTL" -s "$S" set t r2 sec:a=1 pub:a=2
on_socket as_one "$TABLETCTL" -s "$S" deleterow t r2
on_socket expect_fail "not found" ctl lookup t r2
as_one cat "$M/t/.filter/r" | grep -q secret || fail "one's query"

# sec opened to a group, a supplementary group of OTHER's.  Only a
# member may give a group (chown(2)): ONE is none, root gives it.
on_socket not_permitted as_one "$TABLETCTL" -s "$S" chown :$SUPP t:sec
ctl chown :$SUPP t:sec
expect_fail "Operation not permitted" as_one chgrp $SUPP "$R/pub"
chgrp $SUPP "$R/pub"
as_one chmod 0750 "$R/sec"
check_eq "chmod through the mount, seen at once" \
    "$(stat -c '%a %g' "$R/sec")" "750 $SUPP"
check_eq "and by every directory of the family" \
    "$(stat -c '%a' "$R/sec/q")" 750
ctl status t | grep -q "^access  *family sec uid=$ONE_UID gid=$SUPP mode=0750$" ||
    fail "status after chmod: $(ctl status t)"
check_eq "a supplementary group reads through the mount" \
    "$(as_other_supp cat "$R/sec/q/latest")" "secret
more"
[ -n "$CELL" ] ||
    as_other_supp "$TABLETCTL" -s "$S" lookup t r columns=sec |
    grep -q more || fail "a supplementary group reads through the socket"
denied as_other cat "$R/sec/q/latest"
denied as_other_supp sh -c "echo evil >'$R/sec/q/latest'"
# Back through the socket, seen by the mount at once (on a cell, by
# another client: within the caches' time).
if [ -n "$CELL" ]; then
	ctl chmod go-rx t:sec
	settle
else
	as_one "$TABLETCTL" -s "$S" chmod go-rx t:sec
fi
check_eq "chmod through the socket" "$(stat -c '%a' "$R/sec")" 700
denied as_other_supp cat "$R/sec/q/latest"
# Elsewhere chmod succeeds without effect (cp -a, touch).
as_one chmod 0600 "$R/sec/q/latest"
check_eq "a version's mode is the family's" \
    "$(stat -c '%a' "$R/sec/q/latest")" 600
as_one touch "$R/sec/q/latest"
fs_unmount
[ -z "$CELL" ] || exit 0

# Without allow_other: the socket is the owner's alone, as before.
fs_mount
check_eq "socket mode" "$(stat -c %a "$S/tabletfs.sock")" 600
chmod 0666 "$S/tabletfs.sock"
if as_one "$TABLETCTL" -s "$S" lookup t r >/dev/null 2>&1; then
	fail "a private mount's socket served another uid"
fi
fs_unmount
# A tabletctl that opens the store itself checks nothing (root here).
check_eq "direct open" "$(ctl lookup t r columns=sec | grep -c more)" 1
