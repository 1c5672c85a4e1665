#!/bin/sh
# test_fs_corrupt_catalog.sh - flipped bytes in the catalog (docs/design.md
# section 4: every byte read from disk is checksummed).  A family's name
# and a GC policy changed inside catalog.db must make tabletctl check
# name the catalog, and must never turn into a different schema: the
# family's data read through the mount is there or EIO, the policy not
# silently widened.  Every page of catalog.db carries a checksum (catalog
# format 3, src/catalog/format.h), so both changes fail the page's check:
# check names catalog.db and the page and exits non-zero, and a mount
# that needs the page fails with one line naming them.
set -eu
. "${top_srcdir:?}/tests/fs/lib.sh"

fs_webtable
ctl set webtable com.cnn.www anchor:cnnsi.com=CNN@5
ctl compact --major
db=$S/catalog.db
off=$(grep -abo 'maxversions=3' "$db" | head -1 | cut -d: -f1)
[ -n "$off" ] || fail "no GC policy text in $db"
printf 9 | dd of="$db" bs=1 seek=$((off + 12)) conv=notrunc 2>/dev/null
off=$(grep -abo 'anchor' "$db" | head -1 | cut -d: -f1)
[ -n "$off" ] || fail "no family name in $db"
printf z | dd of="$db" bs=1 seek=$((off + 5)) conv=notrunc 2>/dev/null

if ctl check >"$T/check" 2>&1; then
	fail "check passed a damaged catalog: $(cat "$T/check")"
fi
sed 's/^/check: /' "$T/check"
grep -q "catalog" "$T/check" || fail "check: $(cat "$T/check")"
grep -q "catalog\.db: page [0-9]* checksum mismatch" "$T/check" ||
    fail "check does not name the page: $(cat "$T/check")"
if ! "$TABLETFS" "$S" "$M" 2>"$T/mount.err"; then
	grep -q "catalog\.db: page [0-9]* checksum mismatch" "$T/mount.err" ||
	    fail "the failed mount does not name the page: $(cat "$T/mount.err")"
	[ "$(wc -l <"$T/mount.err")" -eq 1 ] ||
	    fail "the failed mount says more than one line: $(cat "$T/mount.err")"
else
	fs_wait_mounted "$M" || fail "$M not mounted"
	if got=$(cat "$M/webtable/com.cnn.www/anchor/cnnsi.com/5" 2>"$T/err")
	then
		check_eq "anchor" "$got" CNN
	else
		grep -q "Input/output error" "$T/err" ||
		    fail "anchor: $(cat "$T/err")"
	fi
	grep -q "maxversions=9" "$M/webtable/.schema" &&
	    fail "the GC policy silently became maxversions=9"
	fs_unmount
fi
