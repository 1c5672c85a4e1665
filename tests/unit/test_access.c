/*
 * test_access.c - access control through the API: the pure check
 * bt_access_allows() (owner, group, supplementary groups, others, root),
 * and owners, groups and modes of tables and families as the store keeps
 * them (created, changed, refused, read from memory, described, kept
 * across a reopen, and kept apart from schema changes).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/tabletfs.h"
#include "api_util.h"
#include "tap.h"

static void
test_allows(void)
{
	const struct bt_access a = { 1000, 100, 0640 };
	const uint32_t groups[] = { 5, 100 }, others[] = { 5, 6 };
	const struct bt_cred owner = { 1000, 1, NULL, 0 };
	const struct bt_cred member = { 2000, 100, NULL, 0 };
	const struct bt_cred supplementary = { 2000, 1, groups, 2 };
	const struct bt_cred stranger = { 2000, 1, others, 2 };
	const struct bt_cred root = { 0, 0, NULL, 0 };
	const struct bt_access owner_less = { 1000, 100, 0074 };
	const struct bt_access none = { 1000, 100, 0 };

	ok(bt_access_allows(&a, &owner, BT_ACCESS_READ | BT_ACCESS_WRITE),
	    "the owner reads and writes with rw-");
	ok(bt_access_allows(&a, &member, BT_ACCESS_READ),
	    "a member of the group reads with r--");
	ok(!bt_access_allows(&a, &member, BT_ACCESS_WRITE),
	    "but does not write");
	ok(!bt_access_allows(&a, &member, BT_ACCESS_READ | BT_ACCESS_WRITE),
	    "nor read and write: every bit asked must be there");
	ok(bt_access_allows(&a, &supplementary, BT_ACCESS_READ),
	    "a supplementary group counts as the group");
	ok(!bt_access_allows(&a, &stranger, BT_ACCESS_READ),
	    "others get ---");
	ok(bt_access_allows(&a, &stranger, 0), "asking for nothing is allowed");
	ok(!bt_access_allows(&owner_less, &owner, BT_ACCESS_READ),
	    "the owner's bits hold for the owner even when the group's and "
	    "others' allow more (POSIX)");
	ok(bt_access_allows(&owner_less, &member, BT_ACCESS_READ |
	    BT_ACCESS_WRITE), "while the group's rwx lets members in");
	ok(!bt_access_allows(&(struct bt_access){ 1000, 100, 0704 }, &member,
	    BT_ACCESS_READ), "and a member is held to the group's bits");
	ok(bt_access_allows(&none, &root, BT_ACCESS_READ | BT_ACCESS_WRITE),
	    "root may do anything, even with mode 0");
	ok(!bt_access_allows(&none, &owner, BT_ACCESS_READ),
	    "the owner of mode 0 may not read");
}

static void
test_store(void)
{
	static const struct bt_family_spec fams[] = {
		{ "a", NULL, NULL }, { "b", NULL, NULL },
	};
	const struct bt_access owner = { 1000, 100, 0750 };
	const struct bt_access keep = { BT_ACCESS_KEEP, BT_ACCESS_KEEP,
	    BT_ACCESS_KEEP };
	struct bt_family_access *list = NULL;
	struct bt_access t, f, change;
	struct tstore ts;
	size_t n = 0;
	char *text;

	/* On a cell too (tests/cell/test_cell_api.sh). */
	tstore_fault(&ts, NULL);
	must(bt_table_create(ts.s, "mine", fams, 1, NULL, 0, 0));
	is_int(bt_access_get(ts.s, "mine", "a", &t, &f), 0, "get");
	ok(t.uid == (uint32_t)geteuid() && t.gid == (uint32_t)getegid() &&
	    t.mode == 0755, "a table belongs to its creator, mode 0755 "
	    "(%u:%u %o)", t.uid, t.gid, t.mode);
	ok(f.uid == t.uid && f.gid == t.gid && f.mode == t.mode,
	    "and its family takes the table's");

	must(bt_table_create_as(ts.s, "web", &owner, fams, 2, NULL, 0, 0));
	is_int(bt_access_get(ts.s, "web", NULL, &t, NULL), 0,
	    "get the table alone");
	ok(t.uid == 1000 && t.gid == 100 && t.mode == 0750,
	    "created as asked (%u:%u %o)", t.uid, t.gid, t.mode);
	is_int(bt_table_create_as(ts.s, "bad", &(struct bt_access){ 1, 1,
	    02755 }, NULL, 0, NULL, 0, 0), -EINVAL, "a setgid mode is -EINVAL");
	is_int(bt_access_get(ts.s, "bad", NULL, &t, NULL), -ENOENT,
	    "and made no table");

	change = keep;
	change.mode = 0700;
	is_int(bt_access_set(ts.s, "web", "a", &change), 0, "chmod web:a");
	change = keep;
	change.uid = 2000;
	change.gid = 200;
	is_int(bt_access_set(ts.s, "web", NULL, &change), 0, "chown web");
	is_int(bt_access_get(ts.s, "web", "a", &t, &f), 0, "get both");
	ok(t.uid == 2000 && t.gid == 200 && t.mode == 0750,
	    "the table's owner changed, not its mode");
	ok(f.uid == 1000 && f.gid == 100 && f.mode == 0700,
	    "the family's mode changed, not its owner");
	change = keep;
	change.mode = 01777;
	is_int(bt_access_set(ts.s, "web", "a", &change), -EINVAL,
	    "a sticky mode is -EINVAL");
	change.mode = 0644;
	is_int(bt_access_set(ts.s, "web", "zz", &change), -ENOENT,
	    "a family that does not exist is -ENOENT");
	is_int(bt_access_get(ts.s, "web", "zz", &t, &f), -ENOENT,
	    "and is -ENOENT to get");

	/* A schema change keeps what was set. */
	must(bt_family_set_gc(ts.s, "web", "a", "maxversions=2"));
	must(bt_family_create(ts.s, "web", &(struct bt_family_spec){ "c",
	    NULL, NULL }));
	is_int(bt_table_access(ts.s, "web", &t, &list, &n), 0, "list");
	ok(n == 3 && strcmp(list[0].name, "a") == 0 &&
	    list[0].access.mode == 0700 && list[1].access.mode == 0750 &&
	    strcmp(list[2].name, "c") == 0 && list[2].access.uid == 2000 &&
	    list[2].access.mode == 0750, "a GC change keeps a's mode; the "
	    "family added later takes the table's owner as it is now");
	free(list);
	must(bt_table_describe_access(ts.s, "web", &text));
	is_str(text, "access table web uid=2000 gid=200 mode=0750\n"
	    "access family a uid=1000 gid=100 mode=0700\n"
	    "access family b uid=1000 gid=100 mode=0750\n"
	    "access family c uid=2000 gid=200 mode=0750\n",
	    "described one a line");
	free(text);

	tstore_reopen(&ts);
	is_int(bt_access_get(ts.s, "web", "a", &t, &f), 0, "get after reopen");
	ok(t.uid == 2000 && f.mode == 0700, "all kept across a reopen");
	must(bt_family_delete(ts.s, "web", "a"));
	is_int(bt_access_get(ts.s, "web", "a", &t, &f), -ENOENT,
	    "a family dropped has no access");
	must(bt_table_delete(ts.s, "web"));
	is_int(bt_access_get(ts.s, "web", NULL, &t, NULL), -ENOENT,
	    "nor a table dropped");
	tstore_destroy(&ts);
}

int
main(void)
{
	test_allows();
	test_store();
	return tap_done();
}
