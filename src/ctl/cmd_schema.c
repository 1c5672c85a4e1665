/*
 * cmd_schema.c - tabletctl's schema verbs: init, createtable,
 * createfamily, setgcpolicy, setgroup, deletefamily, deletetable, ls,
 * groups.
 * GC policies and names are checked by the API, not here.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "coord/coord.h"
#include "ctl/ctl.h"
#include "rpc/rpc.h"
#include "util/env.h"
#include "util/storage.h"
#include "util/units.h"

/* The ZooKeeper session of a command, and how long it may take to
 * connect. */
#define CELL_SESSION_MS 10000

/* A ZooKeeper session for a command on the cell c->store_path. */
static int
cell_coord_open(struct ctl *c, struct coord **coord)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return coord_open(c->store_path, CELL_SESSION_MS,
	    (int64_t)now.tv_sec * 1000000000 + now.tv_nsec +
	    (int64_t)CELL_SESSION_MS * 1000000, coord);
}

/*
 * Make the cell's store (unless secret_only) and its secret (rpc.h) in
 * storage, a directory or a RADOS pool (util/storage.h), reporting a
 * failure.
 */
static int
cell_storage_create(struct ctl *c, const char *storage, bool secret_only)
{
	struct bt_options opts;
	struct storage st;
	struct env *env;
	int rc;

	if ((rc = storage_parse(storage, &st)) < 0)
		return ctl_error(c, "%s", bt_error_detail());
	if ((rc = storage_env_new(&st, &env)) < 0)
		return ctl_fail(c, rc, NULL);
	memset(&opts, 0, sizeof(opts));
	opts.env = st.rados ? env : NULL;
	if (!secret_only && (rc = bt_store_create(st.path, &opts)) < 0) {
		env_free(env);
		return ctl_fail(c, rc, storage);
	}
	rc = rpc_secret_create(env, st.path);
	env_free(env);
	if (rc < 0)
		return ctl_fail(c, rc, NULL);
	return CTL_OK;
}

/*
 * A cell: create its store and its secret in the shared storage, then
 * the cell in ZooKeeper naming it, so that a cell never names a storage
 * that is not a store or has no secret.
 */
static int
cell_init(struct ctl *c, const char *storage)
{
	char settings[4200];
	struct coord *coord;
	int rc;

	snprintf(settings, sizeof(settings), "storage=%s\n", storage);
	if ((rc = cell_storage_create(c, storage, false)) != CTL_OK)
		return rc;
	if ((rc = cell_coord_open(c, &coord)) < 0)
		return ctl_fail(c, rc, c->store_path);
	rc = coord_cell_create(coord, settings);
	coord_close(coord);
	if (rc == -EEXIST)
		return ctl_error(c, "%s: the cell exists already",
		    c->store_path);
	if (rc < 0)
		return ctl_fail(c, rc, c->store_path);
	return CTL_OK;
}

/*
 * init --secret: give a cell made before secrets its secret, in the
 * storage its settings name.  Its processes, which refuse to start
 * without one, can then be started.
 */
static int
cell_init_secret(struct ctl *c)
{
	char storage[4096];
	struct coord *coord;
	int rc;

	if ((rc = cell_coord_open(c, &coord)) < 0)
		return ctl_fail(c, rc, c->store_path);
	rc = coord_cell_storage(coord, storage, sizeof(storage));
	coord_close(coord);
	if (rc < 0)
		return ctl_fail(c, rc, NULL);
	return cell_storage_create(c, storage, true);
}

int
cmd_init(struct ctl *c, int argc, char **argv)
{
	const char *storage = NULL;
	int rc;

	bt_error_clear();
	if (argc == 1 && strcmp(argv[0], "--secret") == 0) {
		if (!coord_address_is_cell(c->store_path))
			return ctl_usage(c, "--secret is for a cell "
			    "(zk://...)");
		return cell_init_secret(c);
	}
	if (argc == 2 && strcmp(argv[0], "--storage") == 0)
		storage = argv[1];
	else if (argc != 0)
		return ctl_usage(c, NULL);
	if (coord_address_is_cell(c->store_path)) {
		if (storage == NULL)
			return ctl_usage(c, "a cell needs --storage DIR");
		return cell_init(c, storage);
	}
	if (storage != NULL)
		return ctl_usage(c, "--storage is for a cell (zk://...)");
	if ((rc = bt_store_create(c->store_path, NULL)) < 0)
		return ctl_fail(c, rc, NULL);
	return CTL_OK;
}

/* Count the items of a comma-separated list. */
static size_t
list_count(const char *list)
{
	size_t n = 1;

	for (; *list != '\0'; list++)
		if (*list == ',')
			n++;
	return n;
}

/* "F1:POLICY,F2,..." into family specs, in place: 0, -EINVAL or
 * -ENOMEM. */
static int
parse_families(char *list, struct bt_family_spec **out, size_t *count)
{
	struct bt_family_spec *f;
	char *item, *next, *colon;
	size_t i = 0;

	if ((f = ctl_calloc(list_count(list), sizeof(*f))) == NULL)
		return -ENOMEM;
	for (item = list; item != NULL; item = next) {
		if ((next = strchr(item, ',')) != NULL)
			*next++ = '\0';
		if ((colon = strchr(item, ':')) != NULL)
			*colon++ = '\0';
		if (*item == '\0') {
			free(f);
			return -EINVAL;
		}
		f[i].name = item;
		f[i].gc_policy = colon;
		i++;
	}
	*out = f;
	*count = i;
	return 0;
}

/* "R1,R2,..." into split rows decoded in place (ctl_arg_name): 0,
 * -EINVAL for a row that is not a valid name, or -ENOMEM. */
static int
parse_splits(char *list, struct bt_bytes **out, size_t *count)
{
	struct bt_bytes *s;
	char *item, *next;
	size_t i = 0;

	*out = NULL;
	*count = 0;
	if (*list == '\0')
		return 0;
	if ((s = ctl_calloc(list_count(list), sizeof(*s))) == NULL)
		return -ENOMEM;
	for (item = list; item != NULL; item = next) {
		if ((next = strchr(item, ',')) != NULL)
			*next++ = '\0';
		if (!ctl_arg_name(item, &s[i++])) {
			free(s);
			return -EINVAL;
		}
	}
	*out = s;
	*count = i;
	return 0;
}

int
cmd_createtable(struct ctl *c, int argc, char **argv)
{
	struct bt_family_spec *fams = NULL;
	struct bt_bytes *splits = NULL;
	size_t fam_count = 0, split_count = 0;
	uint64_t tablet_size = 0;
	bool have_size = false;
	int rc, status = CTL_OK;
	char *v;

	for (int i = 1; i < argc; i++) {
		if ((v = ctl_keyword(argv[i], "families")) != NULL &&
		    fams == NULL) {
			if ((rc = parse_families(v, &fams,
			    &fam_count)) < 0) {
				status = rc == -EINVAL ? ctl_usage(c,
				    "bad families list") : ctl_fail(c, rc, NULL);
				goto out;
			}
		} else if ((v = ctl_keyword(argv[i], "splits")) != NULL &&
		    splits == NULL) {
			if ((rc = parse_splits(v, &splits, &split_count)) < 0) {
				status = rc == -EINVAL ? ctl_usage(c,
				    "bad splits list") : ctl_fail(c, rc, NULL);
				goto out;
			}
		}
		else if ((v = ctl_keyword(argv[i], "tablet_size")) != NULL &&
		    !have_size) {
			if (parse_size(v, &tablet_size) < 0 ||
			    tablet_size == 0) {
				status = ctl_usage(c, "bad size '%s'", v);
				goto out;
			}
			have_size = true;
		} else {
			status = ctl_usage(c, "unexpected '%s'", argv[i]);
			goto out;
		}
	}
	if ((status = ctl_allow_admin(c, NULL)) != CTL_OK)
		goto out;
	bt_error_clear();
	/* Over the socket, the table is its caller's (tabletctl(1)). */
	if (c->cred != NULL)
		rc = bt_table_create_as(c->store, argv[0], &(struct bt_access){
		    c->cred->uid, c->cred->gid, 0755 }, fams, fam_count,
		    splits, split_count, tablet_size);
	else
		rc = bt_table_create(c->store, argv[0], fams, fam_count,
		    splits, split_count, tablet_size);
	if (rc < 0)
		status = ctl_fail(c, rc, NULL);
out:
	free(fams);
	free(splits);
	return status;
}

int
cmd_createfamily(struct ctl *c, int argc, char **argv)
{
	struct bt_family_spec spec = { .name = argv[1] };
	int rc;

	if (argc == 3 && (spec.group = ctl_keyword(argv[2], "group")) == NULL)
		return ctl_usage(c, "unexpected '%s'", argv[2]);
	if (ctl_allow_admin(c, argv[0]) != CTL_OK)
		return CTL_FAIL;
	bt_error_clear();
	if ((rc = bt_family_create(c->store, argv[0], &spec)) < 0)
		return ctl_fail(c, rc, NULL);
	return CTL_OK;
}

int
cmd_setgcpolicy(struct ctl *c, int argc, char **argv)
{
	size_t n = 0;
	char *policy;
	int rc;

	if (ctl_allow_admin(c, argv[0]) != CTL_OK)
		return CTL_FAIL;
	for (int i = 2; i < argc; i++)
		n += strlen(argv[i]) + 1;
	if ((policy = ctl_calloc(n, 1)) == NULL)
		return ctl_fail(c, -ENOMEM, NULL);
	for (int i = 2; i < argc; i++) {
		if (i > 2)
			strcat(policy, " ");
		strcat(policy, argv[i]);
	}
	bt_error_clear();
	rc = bt_family_set_gc(c->store, argv[0], argv[1], policy);
	free(policy);
	if (rc < 0)
		return ctl_fail(c, rc, NULL);
	return CTL_OK;
}

/* "on"/"off" (or, for compression, "snappy"/"none") into 1/0. */
static bool
parse_switch(const char *v, const char *on, const char *off, int *out)
{
	if (strcmp(v, on) == 0)
		*out = 1;
	else if (strcmp(v, off) == 0)
		*out = 0;
	else
		return false;
	return true;
}

int
cmd_setgroup(struct ctl *c, int argc, char **argv)
{
	struct bt_group_spec g = {
		.name = argv[1], .compress = -1, .bloom = -1, .in_memory = -1,
	};
	uint64_t size;
	bool ok;
	char *v;
	int rc;

	for (int i = 2; i < argc; i++) {
		if ((v = ctl_keyword(argv[i], "blocksize")) != NULL) {
			ok = parse_size(v, &size) == 0 && size > 0 &&
			    size <= UINT32_MAX;
			g.block_size = (uint32_t)size;
		} else if ((v = ctl_keyword(argv[i], "compression")) != NULL)
			ok = parse_switch(v, "snappy", "none", &g.compress);
		else if ((v = ctl_keyword(argv[i], "bloom")) != NULL)
			ok = parse_switch(v, "on", "off", &g.bloom);
		else if ((v = ctl_keyword(argv[i], "inmemory")) != NULL)
			ok = parse_switch(v, "on", "off", &g.in_memory);
		else
			ok = false;
		if (!ok)
			return ctl_usage(c, "bad setting '%s'", argv[i]);
	}
	if (ctl_allow_admin(c, argv[0]) != CTL_OK)
		return CTL_FAIL;
	bt_error_clear();
	if ((rc = bt_group_set(c->store, argv[0], &g)) < 0)
		return ctl_fail(c, rc, NULL);
	return CTL_OK;
}

int
cmd_deletefamily(struct ctl *c, int argc, char **argv)
{
	int rc;

	if (ctl_allow_admin(c, argv[0]) != CTL_OK)
		return CTL_FAIL;
	bt_error_clear();
	if ((rc = bt_family_delete(c->store, argv[0], argv[1])) < 0)
		return ctl_fail(c, rc, NULL);
	return CTL_OK;
}

int
cmd_deletetable(struct ctl *c, int argc, char **argv)
{
	int rc;

	if (ctl_allow_admin(c, argv[0]) != CTL_OK)
		return CTL_FAIL;
	bt_error_clear();
	if ((rc = bt_table_delete(c->store, argv[0])) < 0)
		return ctl_fail(c, rc, NULL);
	return CTL_OK;
}

/* Print what describe() says of table. */
static int
describe_print(struct ctl *c, int (*describe)(struct bt_store *,
    const char *, char **), const char *table)
{
	char *text;
	int rc;

	bt_error_clear();
	if ((rc = describe(c->store, table, &text)) < 0)
		return ctl_fail(c, rc, NULL);
	fputs(text, c->out);
	free(text);
	return CTL_OK;
}

/* A table's locality groups, "G blocksize=SIZE compression=... bloom=...
 * inmemory=...", one a line. */
int
cmd_groups(struct ctl *c, int argc, char **argv)
{
	(void)argc;
	if (ctl_allow(c, argv[0], NULL, BT_ACCESS_READ) != CTL_OK)
		return CTL_FAIL;
	return describe_print(c, bt_table_describe_groups, argv[0]);
}

/* Tables, one a line; or a table's families, "F group=G gc=POLICY". */
int
cmd_ls(struct ctl *c, int argc, char **argv)
{
	char **names;
	size_t count;
	int rc;

	if (argc == 1 && ctl_allow(c, argv[0], NULL, BT_ACCESS_READ) != CTL_OK)
		return CTL_FAIL;
	if (argc == 1)
		return describe_print(c, bt_table_describe, argv[0]);
	bt_error_clear();
	if ((rc = bt_table_list(c->store, &names, &count)) < 0)
		return ctl_fail(c, rc, NULL);
	for (size_t i = 0; i < count; i++)
		fprintf(c->out, "%s\n", names[i]);
	bt_names_free(names);
	return CTL_OK;
}
