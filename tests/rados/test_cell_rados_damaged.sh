#!/bin/sh
# test_cell_rados_damaged.sh - damaged SSTable objects in a cell's RADOS
# pool (issue 27 item 4; docs/design.md section 4: every byte read is
# checksummed, a mismatch is EIO for that read and tabletctl check
# reports it, as tests/fs/test_fs_corrupt.sh shows on a directory).
# Table t has small raw blocks (its value bytes can be found in the
# object), table u is the control; after a major compaction each is one
# SSTable object.  Each damage is made with the rados tool, then the
# serving server is killed (-9) so that a standby opens the store
# afresh, as a remount does.  Proves, for a flipped byte in a data block
# (rados get, modify, rados put), an object cut to half (rados
# truncate) and an object the catalog names removed (rados rm):
#  - tabletctl lookup of a damaged row fails (non-zero) with one line
#    naming the object's file and what is wrong with it (EIO from the
#    library); rows outside the damage read back, the other table's
#    all;
#  - tabletctl check on the cell fails and names the object's file as
#    it does on a directory store (data block checksum mismatch at an
#    offset, or the file's problem);
#  - the object restored, every row reads back and check passes.
# Skips (77) without Ceph, librados, Java or ZooKeeper, and under
# ThreadSanitizer (test_env_rados.sh says why).
set -eu
. "${top_srcdir:?top_srcdir must be set}/tests/rados/lib.sh"

CELL_START_ARGS=--rados
cell_start 1
echo "# cell on $(cat "$C/storage-url") up at $(elapsed) s"

# Kill the serving server and start another, which the master gives the
# store to once it has fenced the dead one; returns once table u reads.
reopen() {
	ro_pid=$(cell_serving_pid)
	cell_child_start
	kill -KILL "$ro_pid"
	ro_end=$(( $(now_ms) + LIMIT * 2 ))
	until [ "$(cell_serving_pid)" != "$ro_pid" ] &&
	    ctl lookup u row10 >/dev/null 2>&1; do
		[ "$(now_ms)" -lt "$ro_end" ] ||
		    fail "no server serves the store after killing $ro_pid"
		sleep 0.2
	done
}

# rows TABLE ROW...: "ok" or "EIO" for each row's lookup, in one line;
# fails on a wrong value or any other error.
rows() {
	rw_table=$1
	shift
	rw_out=""
	for rw_i in "$@"; do
		case $rw_table in
		t) rw_want="value-of-row$rw_i-$pad" ;;
		*) rw_want="other-$rw_i" ;;
		esac
		if ctl lookup "$rw_table" "row$rw_i" >"$T/got" 2>"$T/err"; then
			grep -qF "$rw_want" "$T/got" ||
			    fail "$rw_table/row$rw_i reads wrong: $(cat "$T/got")"
			rw_out="$rw_out ok"
		else
			# One line naming the damaged file.
			[ "$(wc -l <"$T/err")" -eq 1 ] &&
			    grep -q "^tabletctl: lookup: .*/$name" "$T/err" ||
			    fail "$rw_table/row$rw_i: $(cat "$T/err")"
			rw_out="$rw_out EIO"
		fi
	done
	echo "${rw_out# }"
}

ctl createtable t families=f
ctl createtable u families=f
ctl setgroup t default blocksize=1k compression=none
pad=$(printf '%0200d' 0)
i=10
while [ $i -lt 60 ]; do
	printf 'row%d\tf\tq\t1000\tvalue-of-row%d-%s\n' $i $i "$pad" >>"$T/t.in"
	printf 'row%d\tf\tq\t1000\tother-%d\n' $i $i >>"$T/u.in"
	i=$((i + 1))
done
ctl import t "$T/t.in" >/dev/null
ctl import u "$T/u.in" >/dev/null
ctl compact --major >/dev/null
rados_c ls | grep '^cell/sst/.*\.sst$' | sort >"$T/ssts"
[ "$(wc -l <"$T/ssts")" -eq 2 ] || fail "want 2 SSTables: $(cat "$T/ssts")"
for o in $(cat "$T/ssts"); do
	rados_c get "$o" "$T/obj"
	if grep -q 'value-of-row' "$T/obj"; then
		tobj=$o
		cp "$T/obj" "$T/pristine"
	fi
done
name=${tobj#cell/}
size=$(stat -c %s "$T/pristine")
check_eq() {
	[ "$2" = "$3" ] || fail "$1: got '$2', want '$3'"
}
check_eq "t before" "$(rows t 10 33 59)" "ok ok ok"
echo "# $tobj ($size bytes) holds t; u in $(grep -v "$tobj" "$T/ssts")" \
    "(at $(elapsed) s)"

# check_fails WHAT PATTERN: tabletctl check fails, naming the file.
check_fails() {
	if ctl check >"$T/check" 2>&1; then
		fail "$1: check passed: $(cat "$T/check")"
	fi
	grep -q "^$name: $2" "$T/check" ||
	    fail "$1: check does not name $name: $(cat "$T/check")"
	echo "#   check: $(grep "^$name: " "$T/check")"
}

# 1. A byte of a value in a data block.
off=$(grep -abo 'value-of-row33-' "$T/pristine" | head -n 1 | cut -d: -f1)
cp "$T/pristine" "$T/obj"
b=$(od -An -tu1 -j $((off + 20)) -N1 "$T/obj" | tr -d ' ')
printf "$(printf '\\%03o' $((b ^ 1)))" |
    dd of="$T/obj" bs=1 seek=$((off + 20)) conv=notrunc 2>/dev/null
rados_c put "$tobj" "$T/obj"
reopen
echo "# flipped byte at $((off + 20)): t rows 10 33 59: $(rows t 10 33 59);" \
    "u: $(rows u 10 33 59); lookup says: $(ctl lookup t row33 2>&1 || :)"
check_eq "flip: t" "$(rows t 10 33 59)" "ok EIO ok"
check_eq "flip: u" "$(rows u 10 33 59)" "ok ok ok"
check_fails flip "data block checksum mismatch at offset "
boff=$(sed -n "s|^$name: data block checksum mismatch at offset ||p" \
    "$T/check")
[ "$boff" -le $((off + 20)) ] && [ $((off + 20 - boff)) -lt 2048 ] ||
    fail "check names block $boff for a byte at $((off + 20))"

# 2. Cut to half; 3. removed.
for what in truncated missing; do
	rados_c put "$tobj" "$T/pristine"
	case $what in
	truncated) rados_c truncate "$tobj" $((size / 2)) ;;
	missing) rados_c rm "$tobj" ;;
	esac
	reopen
	echo "# $what: t rows 10 33 59: $(rows t 10 33 59);" \
	    "u: $(rows u 10 33 59); lookup says: $(ctl lookup t row10 2>&1 || :)"
	check_eq "$what: t" "$(rows t 10 33 59)" "EIO EIO EIO"
	check_eq "$what: u" "$(rows u 10 33 59)" "ok ok ok"
	case $what in
	truncated) check_fails "$what" "" ;;
	missing) check_fails "$what" "named by tablet [0-9]* but missing" ;;
	esac
done

# Restored: every row, and check passes.
rados_c put "$tobj" "$T/pristine"
reopen
check_eq "restored: t" "$(rows t 10 33 59)" "ok ok ok"
ctl check >"$T/check" 2>&1 || fail "restored: check fails: $(cat "$T/check")"
echo "# restored: $(tail -n 1 "$T/check"); took $(elapsed) s"
cell_ok=1
