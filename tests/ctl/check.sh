# tests/ctl/check.sh - the comparison the tabletctl tests share.  Sourced
# after the test sets tmp (a scratch directory) and checks=0 failures=0.
# Defines functions only.

# check NAME STATUS STDOUT STDERR COMMAND...: run COMMAND and compare its
# exit status, stdout and stderr (each without its final newline; ''
# for nothing at all) with what is expected; prints a TAP line.
check() {
	name=$1 want_status=$2 want_out=$3 want_err=$4
	shift 4
	checks=$((checks + 1))
	status=0
	"$@" >"$tmp/out" 2>"$tmp/err" || status=$?
	: >"$tmp/want_out"
	: >"$tmp/want_err"
	[ -z "$want_out" ] || printf '%s\n' "$want_out" >"$tmp/want_out"
	[ -z "$want_err" ] || printf '%s\n' "$want_err" >"$tmp/want_err"
	if [ "$status" -eq "$want_status" ] &&
	    cmp -s "$tmp/want_out" "$tmp/out" &&
	    cmp -s "$tmp/want_err" "$tmp/err"; then
		echo "ok $checks - $name"
		return 0
	fi
	failures=$((failures + 1))
	echo "not ok $checks - $name (exit $status, want $want_status)"
	diff -u "$tmp/want_out" "$tmp/out" || true
	diff -u "$tmp/want_err" "$tmp/err" || true
}
