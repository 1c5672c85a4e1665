/*
 * test_ctl_access.c - the control socket's rules (ctl_access.c,
 * tabletctl(1) PERMISSIONS) without a mount: commands run with
 * ctl_run() on an open store and a caller's credentials, as the daemon
 * runs those that come over its socket, for an owner, a member of the
 * group (by gid and by a supplementary group), another user and root;
 * and the chown(2)/chmod(2) rule ctl_access_change_allowed() alone.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctl/ctl.h"
#include "api_util.h"
#include "tap.h"

#define OWNER	1000
#define GROUP	1000
#define OTHER	2000

static struct tstore ts;
static char err_text[4096];
static char out_text[4096];

/* Run the words of line (blank-separated) as a command from cred:
 * its exit status, its stdout and stderr in out_text and err_text. */
static int
run(const struct bt_cred *cred, const char *line)
{
	char copy[512], *argv[16], *word, *save = NULL, *out = NULL;
	char *err = NULL;
	size_t out_len = 0, err_len = 0;
	FILE *in, *outf, *errf;
	int argc = 0, status;

	snprintf(copy, sizeof(copy), "%s", line);
	for (word = strtok_r(copy, " ", &save); word != NULL && argc < 15;
	    word = strtok_r(NULL, " ", &save))
		argv[argc++] = word;
	argv[argc] = NULL;
	if ((in = fopen("/dev/null", "r")) == NULL ||
	    (outf = open_memstream(&out, &out_len)) == NULL ||
	    (errf = open_memstream(&err, &err_len)) == NULL)
		tap_bail("streams");
	status = ctl_run(ts.s, ts.path, argc, argv, in, outf, errf, cred);
	fclose(in);
	fclose(outf);
	fclose(errf);
	snprintf(out_text, sizeof(out_text), "%s", out);
	snprintf(err_text, sizeof(err_text), "%s", err);
	free(out);
	free(err);
	return status;
}

static void
test_rules(void)
{
	static const struct bt_family_spec fams[] = {
		{ "pub", NULL, NULL }, { "sec", NULL, NULL },
	};
	const uint32_t supp_groups[] = { 7, GROUP };
	const struct bt_cred owner = { OWNER, GROUP, NULL, 0 };
	const struct bt_cred other = { OTHER, OTHER, NULL, 0 };
	const struct bt_cred member = { OTHER, GROUP, NULL, 0 };
	const struct bt_cred supp = { OTHER, OTHER, supp_groups, 2 };
	const struct bt_cred root = { 0, 0, NULL, 0 };
	const struct bt_cred *store_owner = geteuid() == 0 ? &root :
	    &(struct bt_cred){ (uint32_t)geteuid(), (uint32_t)getegid(),
	    NULL, 0 };
	struct bt_access t, f;

	tstore_posix(&ts, NULL);
	must(bt_table_create_as(ts.s, "t", &(struct bt_access){ OWNER, GROUP,
	    0755 }, fams, 2, NULL, 0, 0));
	must(bt_access_set(ts.s, "t", "sec", &(struct bt_access){
	    BT_ACCESS_KEEP, BT_ACCESS_KEEP, 0700 }));

	is_int(run(&owner, "set t r sec:q=secret pub:q=open"), CTL_OK,
	    "the owner writes both families (%s)", err_text);
	is_int(run(&other, "lookup t r"), CTL_FAIL, "another user reads "
	    "every family: refused");
	is_str(err_text, "tabletctl: lookup: t:sec: Permission denied "
	    "(columns= reads the families you may)\n", "naming sec, one line");
	is_int(run(&other, "lookup t r columns=pub"), CTL_OK,
	    "columns=pub reads what may be read");
	ok(strstr(out_text, "open") != NULL, "and prints it");
	is_int(run(&other, "lookup t r columns=sec"), CTL_FAIL,
	    "columns=sec is refused");
	is_str(err_text, "tabletctl: lookup: t:sec: Permission denied\n",
	    "naming it");
	is_int(run(&other, "read t"), CTL_FAIL, "read of every family too");
	is_int(run(&other, "count t columns=pub"), CTL_OK, "count of pub");
	is_int(run(&other, "export t"), CTL_FAIL, "export reads every family");
	is_int(run(&other, "set t r pub:q=evil"), CTL_FAIL,
	    "a write to a table of mode 0755 is refused");
	is_str(err_text, "tabletctl: set: t: Permission denied\n",
	    "naming the table");
	is_int(run(&other, "deleterow t r"), CTL_FAIL, "deleterow too");
	is_int(run(&other, "increment t r pub:n 1"), CTL_FAIL,
	    "increment too");
	is_int(run(&other, "deletefamily t sec"), CTL_FAIL,
	    "a schema change by another user");
	is_int(run(&other, "createtable mine"), CTL_FAIL,
	    "createtable by another user than the store's owner");
	is_int(run(&other, "import t /etc/hostname"), CTL_FAIL,
	    "an import by another user");
	is_int(run(&owner, "lookup t r"), CTL_OK, "the owner reads it all");
	ok(strstr(out_text, "secret") != NULL, "sec included");

	/* The group: by gid, or by a supplementary group. */
	is_int(run(&owner, "chmod 0750 t:sec"), CTL_OK, "chmod by the owner");
	is_int(run(&member, "lookup t r columns=sec"), CTL_OK,
	    "a member of the group reads with 0750");
	is_int(run(&supp, "lookup t r columns=sec"), CTL_OK,
	    "so does a supplementary member");
	is_int(run(&member, "set t r sec:q=x"), CTL_FAIL,
	    "but writes nothing");
	is_int(run(&owner, "chmod g+w t"), CTL_OK, "the table made g+w");
	is_int(run(&owner, "chmod g+w t:pub"), CTL_OK, "and pub");
	is_int(run(&supp, "set t r pub:q=group"), CTL_OK,
	    "a supplementary member writes pub");
	is_int(run(&supp, "import t /etc/hostname"), CTL_FAIL,
	    "an import of a file by a user who may write");
	ok(strstr(err_text, "the daemon opens no file") != NULL,
	    "is refused all the same: %s", err_text);
	is_int(run(&supp, "import t -"), CTL_OK,
	    "standard input it may import (%s)", err_text);
	is_int(run(&supp, "deleterow t r"), CTL_FAIL,
	    "but not a row delete: it writes sec too");
	is_str(err_text, "tabletctl: deleterow: t:sec: Permission denied\n",
	    "naming sec");

	/* chmod and chown. */
	is_int(run(&other, "chmod 0777 t:sec"), CTL_FAIL,
	    "chmod by another user");
	is_str(err_text, "tabletctl: chmod: t:sec: Operation not permitted\n",
	    "is EPERM");
	is_int(run(&owner, "chown 2000 t"), CTL_FAIL,
	    "the owner may not give the table away");
	is_int(run(&owner, "chown :3000 t"), CTL_FAIL,
	    "nor give it a group they are not in");
	is_int(run(&owner, "chown :1000 t:sec"), CTL_OK,
	    "but their own group, yes");
	is_int(run(store_owner, "chown 2000:2000 t:sec"), CTL_OK,
	    "the store's owner gives anything away");
	is_int(bt_access_get(ts.s, "t", "sec", &t, &f), 0, "get");
	ok(f.uid == OTHER && f.gid == OTHER && f.mode == 0750 &&
	    t.uid == OWNER, "sec is 2000's now, the table still 1000's");
	is_int(run(&owner, "chmod 0700 t:sec"), CTL_OK,
	    "the table's owner may still chmod its family");
	is_int(run(&other, "lookup t r columns=sec"), CTL_OK,
	    "and sec's new owner reads it");

	/* Made over the socket: the caller's. */
	is_int(run(&root, "createtable made families=f"), CTL_OK,
	    "root makes a table");
	is_int(bt_access_get(ts.s, "made", "f", &t, &f), 0, "get");
	ok(t.uid == 0 && t.gid == 0 && t.mode == 0755 && f.uid == 0,
	    "it is root's, 0755, and so is its family");
	is_int(run(&root, "status made"), CTL_OK, "status of it");
	ok(strstr(out_text, "access          table made uid=0 gid=0 "
	    "mode=0755\n") != NULL, "shows its access");
	is_int(run(NULL, "deletetable made"), CTL_OK,
	    "without credentials (an open of the store) nothing is checked");
	tstore_destroy(&ts);
}

static void
test_change_rule(void)
{
	const struct bt_access now = { OWNER, GROUP, 0750 };
	const struct bt_access table = { 3000, 3000, 0755 };
	const uint32_t in[] = { 42 };
	const struct bt_cred owner = { OWNER, GROUP, in, 1 };
	const struct bt_cred table_owner = { 3000, 3000, NULL, 0 };
	const struct bt_cred other = { OTHER, OTHER, NULL, 0 };
	const struct bt_cred root = { 0, 0, NULL, 0 };
	const struct bt_access keep = { BT_ACCESS_KEEP, BT_ACCESS_KEEP,
	    BT_ACCESS_KEEP };
	struct bt_access c;

	c = keep;
	c.mode = 0700;
	is_int(ctl_access_change_allowed(&owner, 99, &now, NULL, &c), 0,
	    "chmod: the owner");
	is_int(ctl_access_change_allowed(&other, 99, &now, NULL, &c), -EPERM,
	    "chmod: not another user");
	is_int(ctl_access_change_allowed(&table_owner, 99, &now, &table, &c),
	    0, "chmod of a family: its table's owner");
	is_int(ctl_access_change_allowed(&other, OTHER, &now, NULL, &c), 0,
	    "chmod: the store's owner");
	is_int(ctl_access_change_allowed(&root, 99, &now, NULL, &c), 0,
	    "chmod: root");
	c = keep;
	c.uid = OTHER;
	is_int(ctl_access_change_allowed(&owner, 99, &now, NULL, &c), -EPERM,
	    "chown: the owner does not give it away");
	c.uid = OWNER;
	is_int(ctl_access_change_allowed(&owner, 99, &now, NULL, &c), 0,
	    "chown to the owner it has: nothing to refuse");
	c = keep;
	c.gid = 42;
	is_int(ctl_access_change_allowed(&owner, 99, &now, NULL, &c), 0,
	    "chgrp: to a supplementary group of the owner's");
	c.gid = 43;
	is_int(ctl_access_change_allowed(&owner, 99, &now, NULL, &c), -EPERM,
	    "chgrp: not to a group the owner is not in");
	is_int(ctl_access_change_allowed(&root, 99, &now, NULL, &c), 0,
	    "chgrp: root, to any");
}

int
main(void)
{
	test_change_rule();
	test_rules();
	return tap_done();
}
