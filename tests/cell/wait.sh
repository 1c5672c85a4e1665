# tests/cell/wait.sh - the clock and waits that the cell tests
# (tests/cell/lib.sh) and the multi-host tests (tests/cluster/netns.sh)
# share.  Defines functions only.

now_ms() {
	date +%s%3N
}

# Whether process $1 runs (exited and not yet reaped counts as gone).
alive() {
	al_state=$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null) || :
	[ -n "$al_state" ] && [ "$al_state" != Z ]
}

# wait_log MS FILE PATTERN: wait up to MS ms until a line of FILE
# matches the basic regular expression PATTERN; false if none did.
wait_log() {
	wl_end=$(( $(now_ms) + $1 ))
	until grep -q -- "$3" "$2" 2>/dev/null; do
		[ "$(now_ms)" -lt "$wl_end" ] || return 1
		sleep 0.02
	done
}
