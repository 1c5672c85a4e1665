/*
 * coord_zk.c - what every call of src/coord goes through: the gate of a
 * lost session, ZooKeeper's results as -errno codes, node paths, and
 * reading a node's data.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "coord/coord_int.h"
#include "util/alloc.h"
#include "util/error.h"

int
coord_gate(struct coord *c)
{
	bool valid = coord_lease_valid(c);
	const char *why;

	if (valid)
		return 0;
	mutex_lock(&c->mu);
	why = c->lost_why;
	mutex_unlock(&c->mu);
	return bt_error_set(-ENOLINK, "cell %s: session lost (%s); open a "
	    "new one", c->cell, why ? why : "lease lapsed");
}

int
coord_enter(struct coord *c)
{
	int rc;

	if ((rc = coord_gate(c)) < 0)
		return rc;
	pthread_rwlock_rdlock(&c->zh_lock);
	if (c->zh == NULL) {		/* lost and closed meanwhile */
		pthread_rwlock_unlock(&c->zh_lock);
		return coord_gate(c);
	}
	return 0;
}

void
coord_leave(struct coord *c)
{
	pthread_rwlock_unlock(&c->zh_lock);
}

/* ZooKeeper's result codes as -errno: one table, the header lists the
 * meanings callers rely on. */
static int
zk_errno(int zrc)
{
	switch (zrc) {
	case ZCONNECTIONLOSS:
		return -ENOTCONN;
	case ZOPERATIONTIMEOUT:
		return -ETIMEDOUT;
	case ZSESSIONEXPIRED:
	case ZINVALIDSTATE:	/* the handle died with its session */
	case ZSESSIONMOVED:
		return -ENOLINK;
	case ZCLOSING:
		return -ESHUTDOWN;
	case ZNONODE:
		return -ENOENT;
	case ZNODEEXISTS:
		return -EEXIST;
	case ZBADVERSION:
		return -ESTALE;
	case ZNOTEMPTY:
		return -ENOTEMPTY;
	case ZNOAUTH:
	case ZAUTHFAILED:
		return -EACCES;
	case ZBADARGUMENTS:
	case ZINVALIDACL:
	case ZNOCHILDRENFOREPHEMERALS:
		return -EINVAL;
	case ZMARSHALLINGERROR:
		return -EPROTO;
	case ZUNIMPLEMENTED:
		return -ENOSYS;
	case ZNOTREADONLY:
		return -EROFS;
	default:
		return -EIO;
	}
}

int
coord_zk_error(struct coord *c, int zrc, const char *what)
{
	int rc = zk_errno(zrc);

	if (rc == -ENOLINK || zrc == ZAUTHFAILED) {
		mutex_lock(&c->mu);
		coord_lease_lose(c, "ZooKeeper expired the session");
		mutex_unlock(&c->mu);
	}
	return bt_error_set(rc, "cell %s: %s: %s", c->cell, what,
	    zerror(zrc));
}

int
coord_path(const struct coord *c, char *out, const char *sub,
    const char *name)
{
	int n;

	if (sub == NULL)
		n = snprintf(out, COORD_PATH_MAX, "%s", c->root);
	else if (name == NULL)
		n = snprintf(out, COORD_PATH_MAX, "%s/%s", c->root, sub);
	else
		n = snprintf(out, COORD_PATH_MAX, "%s/%s/%s", c->root, sub,
		    name);
	if (n < 0 || n >= COORD_PATH_MAX)
		return bt_error_set(-ENAMETOOLONG, "cell %s: path of %s/%s "
		    "too long", c->cell, sub ? sub : "", name ? name : "");
	return 0;
}

/*
 * ZooKeeper's get fills a caller's buffer: take COORD_VALUE_MAX (all a
 * value may hold) and give back the rest.
 */
int
coord_node_read(struct coord *c, const char *path, char **data,
    size_t *len, int32_t *version)
{
	struct Stat st;
	int n = COORD_VALUE_MAX;
	char *buf, *shrunk;
	int zrc, rc;

	if ((buf = bt_malloc(COORD_VALUE_MAX + 1)) == NULL) {
		rc = bt_error_set(-ENOMEM, "cell %s: reading %s", c->cell,
		    path);
		goto out;
	}
	zrc = zoo_get(c->zh, path, 0, buf, &n, &st);
	if (zrc == ZNONODE) {
		rc = BT_NOTFOUND;
		goto out_free;
	}
	if (zrc != ZOK) {
		rc = coord_zk_error(c, zrc, path);
		goto out_free;
	}
	if (st.dataLength > COORD_VALUE_MAX) {
		rc = bt_error_set(BT_ETOOBIG, "cell %s: %s holds %d bytes, "
		    "more than %d", c->cell, path, st.dataLength,
		    COORD_VALUE_MAX);
		goto out_free;
	}
	if (n < 0)		/* a node without data */
		n = 0;
	buf[n] = '\0';
	if ((shrunk = bt_realloc(buf, (size_t)n + 1)) != NULL)
		buf = shrunk;
	*data = buf;
	if (len != NULL)
		*len = (size_t)n;
	if (version != NULL)
		*version = st.version;
	return 0;
out_free:
	bt_free(buf);
out:
	return rc;
}
