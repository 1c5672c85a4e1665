#!/bin/sh
# test_install.sh - the installed library as an application sees it:
# make install into a temporary DESTDIR, then build a small C program
# with nothing but `pkg-config --cflags --libs tabletfs` (so the
# installed header must stand alone and must not shadow the C library's
# <error.h>), run it (create a store, a table, put a cell and read it
# back through bt_ calls), and check that the installed shared library
# exports only the functions the installed headers declare, all bt_.
# Skips (77) without pkg-config or a C compiler.
set -eu

: "${top_builddir:?top_builddir is not set}"
cc=${CC:-cc}
if ! command -v pkg-config >/dev/null 2>&1 ||
    ! command -v "$cc" >/dev/null 2>&1; then
	echo "test_install: needs pkg-config and a C compiler: skipped"
	exit 77
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' HUP INT TERM
dest="$tmp/dest"

fail() {
	echo "test_install: $*" >&2
	exit 1
}

# This runs inside make check: the install is a make of its own.
env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL \
    make -s -C "$top_builddir" install DESTDIR="$dest" >"$tmp/install.log" 2>&1 ||
    { cat "$tmp/install.log" >&2; fail "make install failed"; }

pc=$(find "$dest" -name tabletfs.pc)
lib=$(find "$dest" -name libtabletfs.so)
[ -n "$pc" ] || fail "no tabletfs.pc installed"
[ -n "$lib" ] || fail "no libtabletfs.so installed"
[ -z "$(find "$dest" -name error.h)" ] ||
    fail "an error.h is installed, shadowing the C library's"
PKG_CONFIG_PATH=$(dirname "$pc")
PKG_CONFIG_SYSROOT_DIR=$dest
export PKG_CONFIG_PATH PKG_CONFIG_SYSROOT_DIR
unset PKG_CONFIG_LIBDIR

cat >"$tmp/app.c" <<'EOC'
#include <error.h>	/* the C library's, not one of tabletfs's */
#include <stdio.h>
#include <string.h>
#include <tabletfs.h>

#define CHECK(call) do {						\
	int rc_ = (call);						\
	if (rc_ != 0) {							\
		fprintf(stderr, "%s: %s (%s)\n", #call,			\
		    bt_strerror(rc_), bt_error_detail());		\
		return 1;						\
	}								\
} while (0)

int
main(int argc, char **argv)
{
	struct bt_family_spec family = { "f", NULL, NULL };
	struct bt_mutation put = { BT_PUT, "f", { "q", 1 }, 7,
	    { "hello", 5 } };
	struct bt_bytes row = { "row", 3 };
	struct bt_store *s;
	struct bt_row *r;
	const struct bt_cell *c;

	(void)error_message_count;
	if (argc != 2)
		return 2;
	CHECK(bt_store_create(argv[1], NULL));
	CHECK(bt_store_open(argv[1], NULL, &s));
	CHECK(bt_table_create(s, "t", &family, 1, NULL, 0, 0));
	CHECK(bt_mutate_row(s, "t", row, &put, 1, NULL, NULL));
	CHECK(bt_read_row(s, "t", row, NULL, &r));
	c = &r->cells[0];
	if (r->cell_count != 1 || strcmp(c->family, "f") != 0 ||
	    c->ts != 7 || c->value.size != 5 ||
	    memcmp(c->value.data, "hello", 5) != 0) {
		fprintf(stderr, "read back a different cell\n");
		return 1;
	}
	bt_row_free(r);
	CHECK(bt_store_close(s));
	printf("ok\n");
	return 0;
}
EOC
# shellcheck disable=SC2046
# The build's own flags (make check passes them): a library built with
# a sanitizer needs a program built with it, its runtime loaded first.
# shellcheck disable=SC2086
"$cc" -std=c99 -Wall -Wextra -Werror ${CFLAGS:-} ${LDFLAGS:-} \
    -o "$tmp/app" "$tmp/app.c" $(pkg-config --cflags --libs tabletfs) ||
    fail "the program does not build against the installed library"
out=$(LD_LIBRARY_PATH=$(dirname "$lib") "$tmp/app" "$tmp/store") ||
    fail "the program failed: $out"
[ "$out" = ok ] || fail "the program said: $out"

# Every exported name is bt_ and declared in an installed header.
headers=$(dirname "$(find "$dest" -name tabletfs.h)")
nm -D --defined-only "$lib" | awk '{ print $NF }' >"$tmp/exported"
count=$(wc -l <"$tmp/exported")
[ "$count" -gt 0 ] || fail "libtabletfs.so exports nothing"
while read -r name; do
	case $name in
	bt_*) ;;
	*) fail "libtabletfs.so exports $name" ;;
	esac
	grep -q "[ *]$name(" "$headers"/*.h ||
	    fail "libtabletfs.so exports $name, which no installed header declares"
done <"$tmp/exported"
grep -qx bt_store_open "$tmp/exported" || fail "bt_store_open is not exported"
echo "test_install: ok, $count bt_ functions exported"
