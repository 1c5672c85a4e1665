# tests/rados/lib.sh - sourced first by the tests of cells on RADOS:
# skips (77) without Ceph's tools, in a build without librados, and
# under ThreadSanitizer (librados is not built for it: test_env_rados.sh);
# then tests/cell/lib.sh, rados_c, and elapsed, the seconds since this
# was sourced, to a tenth.
: "${top_builddir:?top_builddir must be set}"
: "${top_srcdir:?top_srcdir must be set}"
for tool in ceph-mon ceph-osd ceph rados; do
	command -v $tool >/dev/null 2>&1 || {
		echo "SKIP: no $tool (scripts/install-deps --ceph)" >&2
		exit 77
	}
done
grep -q -- '-DHAVE_RADOS=1' "$top_builddir/Makefile" || {
	echo "SKIP: built without librados" >&2
	exit 77
}
if grep -q -- '-fsanitize=thread' "$top_builddir/Makefile"; then
	echo "SKIP: librados is not built for ThreadSanitizer" >&2
	exit 77
fi
. "$top_srcdir/tests/cell/lib.sh"

# The rados tool on the cell's pool (after cell_start).
rados_c() {
	timeout 20 rados -c "$C/ceph/ceph.conf" -p tabletfs "$@"
}

began=$(now_ms)
elapsed() {
	echo "$(( ($(now_ms) - began) / 100 ))" | sed 's/.$/.&/'
}
