/*
 * fs_access.c - who may do what through the mount (docs/design.md
 * section 2, "Permissions"; tabletfs(1) WRITING, "Permissions").
 *
 * The mount always runs with default_permissions: the kernel checks
 * every request against the owner, group and mode that the daemon
 * presents, with POSIX's rules (x to enter a directory, w and x on the
 * parent to create, unlink or rename, root past everything).  What is
 * presented comes from the catalog:
 *   table and row directories           the table's owner, group, mode
 *   family and column directories       the family's
 *   versions, latest, temporary files   the family's owner and group,
 *                                       its mode & 0666 (@TS & 0444,
 *                                       increment & 0222)
 *   .schema, .tablets, query rows       the table's, mode & 0444
 *   @T1..T2, .filter directories        their table's or family's,
 *                                       mode & 0555
 * The root and .status stay the mounting user's.  What the kernel cannot
 * see the daemon checks: a query (.filter) reads every family it does
 * not filter out, so it needs r on all of them; a rename from one family
 * to another (a family directory within its row, which the kernel lets
 * anyone with w on the row do; a column or a version) moves cells into
 * a family that may be readable by more, so it needs r and w on the
 * one and w on the other; and a chmod or chown, which changes the
 * catalog, is checked again here (chmod(2): the owner or root;
 * chown(2): root, or the owner giving one of their groups).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ctl/ctl.h"
#include "fs/fs.h"
#include "util/alloc.h"

#define FS_ACCESS_MAX_GROUPS	256

/* The permission bits a kind may show of its table's or family's mode
 * (fs NULL: as on a writable mount); 0 for kinds the access does not
 * reach. */
static mode_t
kind_mask(struct fs *fs, enum node_kind kind, bool *of_family)
{
	mode_t writable = fs != NULL && fs->read_only ? 0555 : 0777;

	*of_family = false;
	switch (kind) {
	case NODE_TABLE:
	case NODE_ROW:
		return writable;
	case NODE_SCHEMA:
	case NODE_TABLETS:
	case NODE_QUERY_ROW:
		return 0444;
	case NODE_QUERY:
		return 0555;
	case NODE_FAMILY:
	case NODE_COLUMN:
		*of_family = true;
		return writable;
	case NODE_RANGE:
		*of_family = true;
		return 0555;
	case NODE_VERSION:
	case NODE_LATEST:
	case NODE_TEMP:
		*of_family = true;
		return writable & 0666;
	case NODE_ASOF:
	case NODE_RANGE_VERSION:
		*of_family = true;
		return 0444;
	case NODE_INCREMENT:
		*of_family = true;
		return writable & 0222;
	default:
		return 0;
	}
}

void
fs_access_present(struct fs *fs, const struct coord *c, struct stat *st)
{
	struct bt_access t, f;
	bool of_family;
	mode_t mask = kind_mask(fs, c->kind, &of_family);
	const struct bt_access *a = &t;

	if (mask == 0 || c->table == NULL)
		return;
	if (of_family) {
		if (bt_access_get(fs->store, c->table, c->family, &t, &f) < 0)
			return;
		a = &f;
	} else if (bt_access_get(fs->store, c->table, NULL, &t, NULL) < 0) {
		return;
	}
	/* A temporary file keeps what its creator gave it, within. */
	if (c->kind == NODE_TEMP)
		mask &= st->st_mode & 07777;
	st->st_uid = a->uid;
	st->st_gid = a->gid;
	st->st_mode = (st->st_mode & S_IFMT) | (a->mode & mask);
}

/* The caller of req: uid, gid and supplementary groups (in groups, room
 * for FS_ACCESS_MAX_GROUPS; none when they cannot be read). */
static void
req_cred(fuse_req_t req, struct bt_cred *cred, uint32_t *groups)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	gid_t list[FS_ACCESS_MAX_GROUPS];
	int n;

	cred->uid = (uint32_t)ctx->uid;
	cred->gid = (uint32_t)ctx->gid;
	cred->groups = groups;
	cred->group_count = 0;
	n = fuse_req_getgroups(req, FS_ACCESS_MAX_GROUPS, list);
	for (int i = 0; i < n && i < FS_ACCESS_MAX_GROUPS; i++)
		groups[cred->group_count++] = (uint32_t)list[i];
}

int
fs_access_setattr(struct fs *fs, fuse_req_t req, struct node *n,
    const struct stat *attr, int to_set)
{
	struct bt_access change = { BT_ACCESS_KEEP, BT_ACCESS_KEEP,
	    BT_ACCESS_KEEP };
	uint32_t groups[FS_ACCESS_MAX_GROUPS];
	const char *family = NULL;
	struct bt_access t, f;
	struct bt_cred cred;
	int rc;

	if (!(to_set & (FUSE_SET_ATTR_MODE | FUSE_SET_ATTR_UID |
	    FUSE_SET_ATTR_GID)))
		return 0;
	if (n->c.kind == NODE_FAMILY)
		family = n->c.family;
	else if (n->c.kind != NODE_TABLE)
		return 0;	/* succeeds without effect (cp -a) */
	if (fs->read_only)
		return -EROFS;
	if (to_set & FUSE_SET_ATTR_MODE) {
		/* Set-id and sticky bits mean nothing here. */
		if ((attr->st_mode & 07000) != 0)
			return -EINVAL;
		change.mode = (uint32_t)(attr->st_mode & 0777);
	}
	if (to_set & FUSE_SET_ATTR_UID)
		change.uid = (uint32_t)attr->st_uid;
	if (to_set & FUSE_SET_ATTR_GID)
		change.gid = (uint32_t)attr->st_gid;
	if ((rc = bt_access_get(fs->store, n->c.table, family, &t, &f)) < 0)
		return rc;
	req_cred(req, &cred, groups);
	if ((rc = ctl_access_change_allowed(&cred, (uint32_t)fs->uid,
	    family != NULL ? &f : &t, family != NULL ? &t : NULL,
	    &change)) < 0)
		return rc;
	if ((rc = bt_access_set(fs->store, n->c.table, family,
	    &change)) < 0)
		return rc;
	fs_access_changed(fs, n->c.table);
	return 0;
}

int
fs_access_query(struct fs *fs, fuse_req_t req, const char *table)
{
	uint32_t groups[FS_ACCESS_MAX_GROUPS];
	struct bt_family_access *fams = NULL;
	struct bt_cred cred;
	struct bt_access t;
	size_t count = 0;
	int rc;

	if ((rc = bt_table_access(fs->store, table, &t, &fams, &count)) < 0)
		return rc == -EOPNOTSUPP ? 0 : rc;
	req_cred(req, &cred, groups);
	rc = bt_access_allows(&t, &cred, BT_ACCESS_READ) ? 0 : -EACCES;
	for (size_t i = 0; i < count && rc == 0; i++)
		if (!bt_access_allows(&fams[i].access, &cred, BT_ACCESS_READ))
			rc = -EACCES;
	free(fams);
	return rc;
}

/* Whether coordinates of kind name a family. */
static bool
kind_has_family(enum node_kind kind)
{
	bool of_family;

	return kind_mask(NULL, kind, &of_family) != 0 && of_family;
}

int
fs_access_rename(struct fs *fs, fuse_req_t req, const struct coord *src,
    const struct coord *dst)
{
	uint32_t groups[FS_ACCESS_MAX_GROUPS];
	struct bt_access t, from, to;
	struct bt_cred cred;

	/* A temporary file holds its writer's bytes, not the family's. */
	if (!kind_has_family(src->kind) || !kind_has_family(dst->kind) ||
	    src->kind == NODE_TEMP || strcmp(src->family, dst->family) == 0)
		return 0;
	if (bt_access_get(fs->store, src->table, src->family, &t, &from) < 0 ||
	    bt_access_get(fs->store, dst->table, dst->family, &t, &to) < 0)
		return 0;	/* the rename itself says what is missing */
	req_cred(req, &cred, groups);
	if (!bt_access_allows(&from, &cred, BT_ACCESS_READ |
	    BT_ACCESS_WRITE) || !bt_access_allows(&to, &cred,
	    BT_ACCESS_WRITE))
		return -EACCES;
	return 0;
}

/* fs_access_changed's match: a node in table (any table when NULL). */
static bool
node_in_table(struct node *n, void *arg)
{
	const char *table = arg;

	return n->c.kind != NODE_ROOT && n->c.table != NULL &&
	    (table == NULL || strcmp(n->c.table, table) == 0);
}

void
fs_access_changed(struct fs *fs, const char *table)
{
	/* A negative offset: the attributes alone, not the page cache. */
	fs_nodes_invalidate(fs, node_in_table, (void *)table, -1);
}
