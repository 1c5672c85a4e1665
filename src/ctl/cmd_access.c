/*
 * cmd_access.c - tabletctl's chmod and chown: who may read and write a
 * table or a family (tabletctl(1), PERMISSIONS).  Modes are chmod(1)'s,
 * octal or symbolic, limited to the nine permission bits; owners and
 * groups are names or numbers, as chown(1) takes them.
 */
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl/ctl.h"

/* "T" or "T:F" split in place into a table and a family (NULL). */
static int
parse_target(struct ctl *c, char *arg, const char **table,
    const char **family)
{
	char *colon = strchr(arg, ':');

	*table = arg;
	*family = NULL;
	if (colon != NULL) {
		*colon = '\0';
		*family = colon + 1;
		if (**family == '\0')
			return ctl_usage(c, "bad target '%s:' (want T or T:F)",
			    arg);
	}
	if (**table == '\0')
		return ctl_usage(c, "no table in '%s'", arg);
	return CTL_OK;
}

/* The permission bits a symbolic clause's "who" selects. */
static unsigned
who_bits(const char *who, size_t n)
{
	unsigned bits = 0;

	if (n == 0)
		return 0777;
	for (size_t i = 0; i < n; i++) {
		switch (who[i]) {
		case 'u':
			bits |= 0700;
			break;
		case 'g':
			bits |= 0070;
			break;
		case 'o':
			bits |= 0007;
			break;
		default:	/* 'a' */
			bits |= 0777;
			break;
		}
	}
	return bits;
}

/*
 * A mode as chmod(1) takes it, applied to mode now: octal (0 to 0777),
 * or comma-separated clauses [ugoa]*[+-=][rwxX]*.  0 and *out, or
 * -EINVAL (set-id and sticky bits included: they mean nothing here).
 */
static int
mode_parse(const char *text, unsigned now, unsigned *out)
{
	const char *p = text;
	unsigned mode = now;
	char *end;

	if (*text >= '0' && *text <= '7') {
		unsigned long v = strtoul(text, &end, 8);

		if (*end != '\0' || v > 0777)
			return -EINVAL;
		*out = (unsigned)v;
		return 0;
	}
	while (*p != '\0') {
		size_t n = strspn(p, "ugoa");
		unsigned who = who_bits(p, n), perm = 0;
		char op;

		p += n;
		if (*p != '+' && *p != '-' && *p != '=')
			return -EINVAL;
		while (*p == '+' || *p == '-' || *p == '=') {
			op = *p++;
			perm = 0;
			for (; *p != '\0' && *p != ',' && *p != '+' &&
			    *p != '-' && *p != '='; p++) {
				if (*p == 'r')
					perm |= 0444;
				else if (*p == 'w')
					perm |= 0222;
				else if (*p == 'x' || *p == 'X')
					perm |= 0111;
				else
					return -EINVAL;
			}
			if (op == '+')
				mode |= perm & who;
			else if (op == '-')
				mode &= ~(perm & who);
			else
				mode = (mode & ~who) | (perm & who);
		}
		if (*p == ',' && *++p == '\0')
			return -EINVAL;
	}
	*out = mode & 0777;
	return 0;
}

/* Make change to table (or its family) if the caller may. */
static int
access_apply(struct ctl *c, const char *table, const char *family,
    const struct bt_access *change)
{
	int rc;

	if (ctl_allow_change(c, table, family, change) != CTL_OK)
		return CTL_FAIL;
	bt_error_clear();
	if ((rc = bt_access_set(c->store, table, family, change)) < 0)
		return ctl_fail(c, rc, NULL);
	return CTL_OK;
}

int
cmd_chmod(struct ctl *c, int argc, char **argv)
{
	struct bt_access change = { BT_ACCESS_KEEP, BT_ACCESS_KEEP, 0 };
	struct bt_access t, f;
	const char *table, *family;
	unsigned mode;
	int rc, status;

	(void)argc;
	if ((status = parse_target(c, argv[1], &table, &family)) != CTL_OK)
		return status;
	bt_error_clear();
	if ((rc = bt_access_get(c->store, table, family, &t, &f)) < 0)
		return ctl_fail(c, rc, NULL);
	if (mode_parse(argv[0], family != NULL ? f.mode : t.mode,
	    &mode) < 0)
		return ctl_fail(c, bt_error_set(-EINVAL, "bad mode '%s' (want "
		    "the permission bits, octal as 0750 or symbolic as g+w)",
		    argv[0]), NULL);
	change.mode = mode;
	return access_apply(c, table, family, &change);
}

/* A user or group named by name or number into *id; false if unknown. */
static bool
id_parse(const char *text, bool group, uint32_t *id, uint32_t *login_gid)
{
	char buf[4096], *end;
	struct passwd pw, *pwp = NULL;
	struct group gr, *grp = NULL;
	unsigned long v;

	if (*text >= '0' && *text <= '9') {
		v = strtoul(text, &end, 10);
		if (*end != '\0' || v >= BT_ACCESS_KEEP)
			return false;
		*id = (uint32_t)v;
		if (!group && login_gid != NULL &&
		    getpwuid_r((uid_t)v, &pw, buf, sizeof(buf), &pwp) == 0 &&
		    pwp != NULL)
			*login_gid = (uint32_t)pw.pw_gid;
		return true;
	}
	if (group) {
		if (getgrnam_r(text, &gr, buf, sizeof(buf), &grp) != 0 ||
		    grp == NULL)
			return false;
		*id = (uint32_t)gr.gr_gid;
		return true;
	}
	if (getpwnam_r(text, &pw, buf, sizeof(buf), &pwp) != 0 || pwp == NULL)
		return false;
	*id = (uint32_t)pw.pw_uid;
	if (login_gid != NULL)
		*login_gid = (uint32_t)pw.pw_gid;
	return true;
}

/*
 * chown USER[:GROUP] T[:F]: "USER" the owner alone, "USER:GROUP" both,
 * ":GROUP" the group alone, "USER:" the owner and the user's login group
 * (chown(1)).
 */
int
cmd_chown(struct ctl *c, int argc, char **argv)
{
	struct bt_access change = { BT_ACCESS_KEEP, BT_ACCESS_KEEP,
	    BT_ACCESS_KEEP };
	const char *table, *family, *user = argv[0], *group = NULL;
	uint32_t login_gid = BT_ACCESS_KEEP;
	char *colon;
	int status;

	(void)argc;
	if ((status = parse_target(c, argv[1], &table, &family)) != CTL_OK)
		return status;
	if ((colon = strchr(argv[0], ':')) != NULL) {
		*colon = '\0';
		group = colon + 1;
	}
	if (*user == '\0' && (group == NULL || *group == '\0'))
		return ctl_usage(c, "no user or group");
	bt_error_clear();
	if (*user != '\0' && !id_parse(user, false, &change.uid, &login_gid))
		return ctl_fail(c, bt_error_set(-EINVAL, "unknown user '%s'",
		    user), NULL);
	if (group != NULL && *group != '\0' &&
	    !id_parse(group, true, &change.gid, NULL))
		return ctl_fail(c, bt_error_set(-EINVAL, "unknown group '%s'",
		    group), NULL);
	if (group != NULL && *group == '\0') {
		if (login_gid == BT_ACCESS_KEEP)
			return ctl_fail(c, bt_error_set(-EINVAL, "user '%s' "
			    "has no login group", user), NULL);
		change.gid = login_gid;
	}
	return access_apply(c, table, family, &change);
}
