#!/bin/sh
# test_fs_crash.sh - kill -9 of the daemon in the middle of a loop of
# shell writes: after the dead mount is detached and the store remounted,
# every write whose close() succeeded is there with its exact content.
# (The loop writes through cat, which checks close(); a shell's own
# "echo v > f" ignores close(), where a commit's error is reported.)
set -eu
. "${top_srcdir:?}/tests/fs/lib.sh"

fs_webtable
fs_mount
Q=$M/webtable/crash/anchor/q
mkdir -p "$Q"
echo before > "$Q/1"
: > "$T/acked"

(
	i=2
	while [ $i -le 1000000 ]; do
		if printf 'value %d\n' $i | cat 2>/dev/null >"$Q/$i"; then
			echo $i >> "$T/acked"
		else
			break
		fi
		i=$((i + 1))
	done
) &
writer=$!
# Let some writes land, then kill the daemon without warning.
while [ "$(wc -l < "$T/acked")" -lt 50 ]; do
	sleep 0.05
done
kill -9 "$(fs_daemon_pid)"
wait $writer || :
fs_wait_daemon
# The dead daemon's mount is left behind: mounting over it says how to
# clear it, before the store is opened.
expect_fail "fusermount3 -u $M" "$TABLETFS" "$S" "$M"
fusermount3 -u "$M" 2>/dev/null || umount -l "$M"
n=$(wc -l < "$T/acked")
[ "$n" -ge 50 ] || fail "only $n writes acknowledged"

fs_mount
check_eq "before" "$(cat "$Q/1")" "before"
ls "$Q" > "$T/listed"
while read -r ts; do
	grep -qx "$ts" "$T/listed" || fail "acknowledged version $ts lost"
done < "$T/acked"
# Every acknowledged value, exactly: one cat over all of them.
sed "s|.*|$Q/&|" "$T/acked" | tr '\n' '\0' | xargs -0 cat > "$T/got"
sed 's/.*/value &/' "$T/acked" > "$T/want"
cmp "$T/got" "$T/want" || fail "acknowledged values differ"
# The store still takes writes.
echo after > "$Q/latest"
check_eq "after" "$(cat "$Q/latest")" "after"
