/*
 * ctl_access.c - who may run what over the control socket (tabletctl(1),
 * PERMISSIONS; docs/design.md section 2, "Permissions").  The daemon
 * runs each command with the peer's credentials (struct ctl.cred); a
 * tabletctl that opens the store itself has none and checks nothing:
 * whoever can open the store's files owns it.
 *
 *   reads     r on the table and on each family read; reading every
 *             family needs r on all of them (columns= reads fewer)
 *   writes    w on the table and on each family written; a row delete
 *             writes every family
 *   schema    the table's owner, the store's owner or root
 *   chmod     the owner of what changes (or its table's owner), the
 *   chown     store's owner or root; a group given by anyone but root
 *             and the store's owner must be one of the caller's, and an
 *             owner other than the present one only they may give
 *             (chown(2))
 *
 * A refusal is one line, "tabletctl: VERB: T[:F]: Permission denied"
 * (EPERM, "Operation not permitted", for chmod and chown as chmod(2) and
 * chown(2) say), and the command changes nothing.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ctl/ctl.h"

static bool
privileged(const struct ctl *c)
{
	return c->cred->uid == 0 || c->cred->uid == c->store_uid;
}

static int
denied(struct ctl *c, const char *table, const char *family)
{
	if (family != NULL)
		return ctl_error(c, "%s:%s: %s", table, family,
		    strerror(EACCES));
	return ctl_error(c, "%s: %s", table, strerror(EACCES));
}

int
ctl_allow(struct ctl *c, const char *table, const char *family, int want)
{
	struct bt_access t, f;
	int rc;

	if (c->cred == NULL)
		return CTL_OK;
	bt_error_clear();
	/* No such family: the table's alone; no such table: the command
	 * says so itself. */
	if ((rc = bt_access_get(c->store, table, family, &t, &f)) == -ENOENT &&
	    family != NULL) {
		family = NULL;
		rc = bt_access_get(c->store, table, NULL, &t, NULL);
	}
	if (rc < 0)
		return rc == -ENOENT || rc == -EOPNOTSUPP ? CTL_OK :
		    ctl_fail(c, rc, NULL);
	if (!bt_access_allows(&t, c->cred, want))
		return denied(c, table, NULL);
	if (family != NULL && !bt_access_allows(&f, c->cred, want))
		return denied(c, table, family);
	return CTL_OK;
}

/* Whether family is one that cols (n of them) name. */
static bool
family_named(const char *family, const struct bt_column *cols, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(cols[i].family, family) == 0)
			return true;
	return false;
}

int
ctl_allow_read(struct ctl *c, const char *table,
    const struct bt_read_options *ro)
{
	struct bt_family_access *fams = NULL;
	struct bt_access t;
	size_t n = 0, ncols, nregex;
	bool all;
	int rc, status = CTL_OK;

	if (c->cred == NULL)
		return CTL_OK;
	ncols = ro != NULL && ro->columns != NULL ? ro->column_count : 0;
	nregex = ro != NULL && ro->column_regexes != NULL ?
	    ro->column_regex_count : 0;
	all = ncols == 0 && nregex == 0;
	bt_error_clear();
	if ((rc = bt_table_access(c->store, table, &t, &fams, &n)) < 0)
		return rc == -ENOENT || rc == -EOPNOTSUPP ? CTL_OK :
		    ctl_fail(c, rc, NULL);
	if (!bt_access_allows(&t, c->cred, BT_ACCESS_READ)) {
		status = denied(c, table, NULL);
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		if (!all && !family_named(fams[i].name, ro->columns, ncols) &&
		    !family_named(fams[i].name, ro->column_regexes, nregex))
			continue;
		if (bt_access_allows(&fams[i].access, c->cred,
		    BT_ACCESS_READ))
			continue;
		if (all)
			status = ctl_error(c, "%s:%s: %s (columns= reads the "
			    "families you may)", table, fams[i].name,
			    strerror(EACCES));
		else
			status = denied(c, table, fams[i].name);
		break;
	}
out:
	free(fams);
	return status;
}

int
ctl_allow_mutations(struct ctl *c, const char *table,
    const struct bt_mutation *m, size_t n)
{
	struct bt_family_access *fams = NULL;
	struct bt_access t;
	size_t count = 0;
	int rc, status = CTL_OK;

	if (c->cred == NULL)
		return CTL_OK;
	for (size_t i = 0; i < n; i++)
		if (m[i].kind == BT_DELETE_ROW)
			goto every_family;
	if ((status = ctl_allow(c, table, NULL, BT_ACCESS_WRITE)) != CTL_OK)
		return status;
	for (size_t i = 0; i < n && status == CTL_OK; i++)
		status = ctl_allow(c, table, m[i].family, BT_ACCESS_WRITE);
	return status;
every_family:
	bt_error_clear();
	if ((rc = bt_table_access(c->store, table, &t, &fams, &count)) < 0)
		return rc == -ENOENT || rc == -EOPNOTSUPP ? CTL_OK :
		    ctl_fail(c, rc, NULL);
	if (!bt_access_allows(&t, c->cred, BT_ACCESS_WRITE))
		status = denied(c, table, NULL);
	for (size_t i = 0; i < count && status == CTL_OK; i++)
		if (!bt_access_allows(&fams[i].access, c->cred,
		    BT_ACCESS_WRITE))
			status = denied(c, table, fams[i].name);
	free(fams);
	return status;
}

int
ctl_allow_admin(struct ctl *c, const char *table)
{
	struct bt_access t;
	int rc;

	if (c->cred == NULL || privileged(c))
		return CTL_OK;
	if (table == NULL)
		return ctl_error(c, "%s (the store's owner's alone)",
		    strerror(EACCES));
	bt_error_clear();
	if ((rc = bt_access_get(c->store, table, NULL, &t, NULL)) < 0)
		return rc == -ENOENT || rc == -EOPNOTSUPP ? CTL_OK :
		    ctl_fail(c, rc, NULL);
	if (c->cred->uid != t.uid)
		return denied(c, table, NULL);
	return CTL_OK;
}

/* Whether the caller is in group gid. */
static bool
in_group(const struct bt_cred *cred, uint32_t gid)
{
	if (cred->gid == gid)
		return true;
	for (size_t i = 0; i < cred->group_count; i++)
		if (cred->groups[i] == gid)
			return true;
	return false;
}

int
ctl_access_change_allowed(const struct bt_cred *cred, uint32_t store_uid,
    const struct bt_access *now, const struct bt_access *table_now,
    const struct bt_access *change)
{
	bool owner;

	if (cred->uid == 0 || cred->uid == store_uid)
		return 0;
	owner = cred->uid == now->uid ||
	    (table_now != NULL && cred->uid == table_now->uid);
	if (!owner)
		return -EPERM;
	if (change->uid != BT_ACCESS_KEEP && change->uid != now->uid)
		return -EPERM;
	if (change->gid != BT_ACCESS_KEEP && change->gid != now->gid &&
	    !in_group(cred, change->gid))
		return -EPERM;
	return 0;
}

int
ctl_allow_change(struct ctl *c, const char *table, const char *family,
    const struct bt_access *change)
{
	struct bt_access t, f;
	int rc;

	if (c->cred == NULL)
		return CTL_OK;
	bt_error_clear();
	if ((rc = bt_access_get(c->store, table, family, &t, &f)) < 0)
		return rc == -ENOENT || rc == -EOPNOTSUPP ? CTL_OK :
		    ctl_fail(c, rc, NULL);
	if (ctl_access_change_allowed(c->cred, c->store_uid,
	    family != NULL ? &f : &t, family != NULL ? &t : NULL,
	    change) == 0)
		return CTL_OK;
	if (family != NULL)
		return ctl_error(c, "%s:%s: %s", table, family,
		    strerror(EPERM));
	return ctl_error(c, "%s: %s", table, strerror(EPERM));
}
