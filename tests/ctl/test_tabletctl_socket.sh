#!/bin/sh
# test_tabletctl_socket.sh - tabletctl through the daemon's control
# socket: the same commands on the same store give the same stdout,
# stderr and exit status mounted (over STORE/tabletfs.sock) as unmounted
# (opening the store directly; but for the file named by a failing import,
# absolute over the socket); init is refused while mounted; the socket
# is mode 0600, survives a malformed request, is removed at unmount, and a
# stale one is ignored.  Skipped (77) without FUSE.
set -eu

. "$top_srcdir/tests/fs/lib.sh"

python_send() {
	python3 - "$S/tabletfs.sock" "$1" <<'PY'
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
sys.stdout.write(data[12:].decode())
PY
}

# rec DIR NAME CMD...: run CMD in $T, stdin from $T/stdin, and keep its
# stdout, stderr and exit status as DIR/NAME.{out,err,rc}.
rec() {
	dir=$1 name=$2
	shift 2
	rc=0
	(cd "$T" && "$@") <"$T/stdin" >"$dir/$name.out" 2>"$dir/$name.err" ||
	    rc=$?
	echo "$rc" >"$dir/$name.rc"
}

# The commands compared, on the store named relatively ("store").
sequence() {
	d=$1
	mkdir "$d"
	c="$TABLETCTL -s store"
	: >"$T/stdin"
	rec "$d" ls $c ls
	rec "$d" ls_w $c ls w
	rec "$d" lookup $c lookup w r1
	rec "$d" read $c read w
	rec "$d" set $c set w r2 'f:a=x\x00y@10' g:b=y@11
	rec "$d" lookup_cols $c lookup w r2 columns=f
	rec "$d" inc1 $c increment n ctr c:hits 5
	rec "$d" inc2 $c increment n ctr c:hits -2
	rec "$d" cas_yes $c checkandset w r1 f:a v1 f:a=v2@20
	rec "$d" cas_no $c checkandset w r1 f:a nope f:a=v3@30
	rec "$d" import_file $c import w cells.txt
	printf 'r5\tf\ta\t50\tfrom stdin\nr5\tg\tz\t51\t\\x01\n' >"$T/stdin"
	rec "$d" import_stdin $c import w -
	: >"$T/stdin"
	rec "$d" import_bad $c import w bad.txt
	rec "$d" import_missing $c import w missing.txt
	rec "$d" export $c export w
	rec "$d" count $c count w
	rec "$d" split $c split w r2
	rec "$d" split_again $c split w r2
	rec "$d" tablets $c tablets
	rec "$d" compact $c compact w
	rec "$d" compact_major $c compact --major
	rec "$d" check $c check
	rec "$d" status $c status
	rec "$d" notfound $c lookup w nope
	rec "$d" usage $c lookup w
	rec "$d" usage_kw $c read w bogus=1
	rec "$d" unknown $c frobnicate
	rec "$d" exists $c createtable w
	rec "$d" deleterow $c deleterow w r2
	rec "$d" deletecolumn $c deletecolumn w r1 g x
	rec "$d" read_after $c read w prefix=r
	rec "$d" createtable $c createtable t2 families=a splits=m
	rec "$d" createfamily $c createfamily t2 b group=cold
	rec "$d" setgcpolicy $c setgcpolicy t2 a maxversions=2 or maxage=7d
	rec "$d" setgcpolicy_bad $c setgcpolicy t2 a maxversions=0
	rec "$d" setgroup $c setgroup t2 cold blocksize=4k compression=none
	rec "$d" ls_t2 $c ls t2
	rec "$d" deletefamily $c deletefamily t2 b
	rec "$d" deletetable $c deletetable t2
	rec "$d" ls_after $c ls
	rec "$d" nostore "$TABLETCTL" -s "$T/nothing" ls
}

ctl init
ctl createtable w families=f:maxversions=3,g
ctl createtable n families=c
ctl set w r1 f:a=v1@1 g:x=hello@2
printf 'r3\tf\ta\t30\tthree\nr4\tg\tq\t40\tfour\\x09five\n' >"$T/cells.txt"
printf 'r6\tf\ta\tnot-a-time\tbad\n' >"$T/bad.txt"
cp -a "$S" "$T/pristine"

fs_mount
check_eq "socket mode" "$(stat -c %a "$S/tabletfs.sock")" 600
expect_fail "store is mounted" ctl init
sequence "$T/mounted"

# A malformed request, then one with too many words, then a lookup.
check_eq "garbage request" "$(python_send 67617262616765)" \
    "tabletctl: malformed request"
check_eq "argc too big" "$(python_send 54464331ffffff00)" \
    "tabletctl: malformed request"
check_eq "served after malformed" "$(ctl lookup w r1 | sed -n 4p)" \
    '    "v2"'
# A request that announces 200 MiB of stdin and sends none is refused.
check_eq "announced stdin never sent" \
    "$(python_send 544643310100000001000000780000800c)" \
    "tabletctl: malformed request"
# An import of 3000 rows (about 400 KiB) from stdin arrives whole.
seq 1 3000 | awk '{ printf "big%05d\tf\ta\t7\t%0100d\n", $1, $1 }' \
    >"$T/big.txt"
ctl import w - <"$T/big.txt" >/dev/null
check_eq "big stdin import" "$(ctl read w prefix=big | grep -c '^big')" 3000
fs_unmount
[ ! -e "$S/tabletfs.sock" ] || fail "tabletfs.sock left after unmount"

# A stale socket (its daemon gone) is passed over.
python3 -c 'import socket, sys
socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$S/tabletfs.sock"
check_eq "stale socket ignored" "$(ctl ls)" "$(printf 'n\nw')"

rm -rf "$S"
cp -a "$T/pristine" "$S"
sequence "$T/direct"

n=0
for f in "$T"/direct/*.rc; do
	name=$(basename "$f" .rc)
	n=$((n + 1))
	for ext in rc out err; do
		want=$T/direct/$name.$ext
		got=$T/mounted/$name.$ext
		case $name.$ext in
		status.out)
			# Counters differ; the command works both ways.
			continue ;;
		tablets.out)
			# sstables, bytes and memtable depend on flushes.
			cut -f1-3 "$want" >"$T/want"
			cut -f1-3 "$got" >"$T/got" ;;
		import_bad.err|import_missing.err)
			# The daemon is given the file's absolute name.
			cp "$want" "$T/want"
			sed "s|$T/||" "$got" >"$T/got" ;;
		check.out)
			sed 's/[0-9][0-9]*/N/g' "$want" >"$T/want"
			sed 's/[0-9][0-9]*/N/g' "$got" >"$T/got" ;;
		*)
			cp "$want" "$T/want"
			cp "$got" "$T/got" ;;
		esac
		if ! cmp -s "$T/want" "$T/got"; then
			diff -u "$T/want" "$T/got" >&2 || :
			fail "$name: $ext differs mounted and unmounted"
		fi
	done
done
check_eq "exit status of lookup of a missing row" \
    "$(cat "$T/direct/notfound.rc")" 1
check_eq "exit status of a usage error" "$(cat "$T/direct/usage.rc")" 2
check_eq "increment" "$(cat "$T/direct/inc2.out")" 3
check_eq "checkandset applied" "$(cat "$T/direct/cas_yes.out")" applied
check_eq "checkandset not applied" "$(cat "$T/direct/cas_no.rc")" 1
check_eq "count" "$(cat "$T/direct/count.out")" 5
check_eq "check" "$(sed 's/.*: //' "$T/direct/check.out")" OK
check_eq "import from a file" \
    "$(grep -c '^r[34]	' "$T/direct/export.out")" 2
check_eq "import from stdin" "$(grep -c '^r5' "$T/direct/export.out")" 2
check_eq "commands compared" "$n" 41
echo "ok: $n commands alike mounted and unmounted"
