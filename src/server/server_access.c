/*
 * server_access.c - who may use each table and family, kept in memory
 * beside the table's schema (server_int.h, struct server_access) so
 * that a check costs a lookup, not a catalog read.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "server/server_int.h"
#include "util/alloc.h"
#include "util/error.h"

int
server_access_new(const struct catalog_table *ct, struct server_access **out)
{
	struct server_access *a;

	if ((a = bt_calloc(1, sizeof(*a) + (ct->family_count + 1) *
	    sizeof(a->families[0]))) == NULL)
		return -ENOMEM;
	a->table = ct->access;
	a->family_count = ct->family_count;
	for (size_t i = 0; i < ct->family_count; i++) {
		snprintf(a->families[i].name, sizeof(a->families[i].name),
		    "%s", ct->families[i].name);
		a->families[i].access = ct->families[i].access;
	}
	*out = a;
	return 0;
}

/* The access of the table named table, or NULL; caller holds
 * tables_mu. */
static const struct server_access *
access_find_locked(struct server *s, const char *table)
{
	mutex_assert_held(&s->tables_mu);
	for (size_t i = 0; i < s->table_count; i++)
		if (strcmp(s->tables[i]->name, table) == 0)
			return s->tables[i]->access;
	return NULL;
}

int
server_access_get(struct server *s, const char *table, const char *family,
    struct catalog_access *table_access, struct catalog_access *family_access)
{
	const struct server_access *a;
	int rc = 0;

	if (table == NULL)
		return bt_error_set(-EINVAL, "no table name");
	mutex_lock(&s->tables_mu);
	if ((a = access_find_locked(s, table)) == NULL) {
		mutex_unlock(&s->tables_mu);
		return bt_error_set(-ENOENT, "table %s: no such table", table);
	}
	*table_access = a->table;
	if (family != NULL) {
		rc = -ENOENT;
		for (size_t i = 0; i < a->family_count; i++) {
			if (strcmp(a->families[i].name, family) == 0) {
				*family_access = a->families[i].access;
				rc = 0;
				break;
			}
		}
	}
	mutex_unlock(&s->tables_mu);
	if (rc < 0)
		return bt_error_set(rc, "table %s: no family %s", table,
		    family);
	return 0;
}

int
server_access_list(struct server *s, const char *table,
    struct catalog_access *table_access, char (**names)[CATALOG_NAME_MAX + 1],
    struct catalog_access **families, size_t *count)
{
	const struct server_access *a;
	char (*n)[CATALOG_NAME_MAX + 1];
	struct catalog_access *f;
	size_t k;

	if (table == NULL)
		return bt_error_set(-EINVAL, "no table name");
	/* Sized under the lock; the schema may change between tries. */
	for (;;) {
		mutex_lock(&s->tables_mu);
		if ((a = access_find_locked(s, table)) == NULL) {
			mutex_unlock(&s->tables_mu);
			return bt_error_set(-ENOENT, "table %s: no such table",
			    table);
		}
		k = a->family_count;
		mutex_unlock(&s->tables_mu);
		n = bt_calloc(k + 1, sizeof(*n));
		f = bt_calloc(k + 1, sizeof(*f));
		if (n == NULL || f == NULL) {
			bt_free(n);
			bt_free(f);
			return -ENOMEM;
		}
		mutex_lock(&s->tables_mu);
		if ((a = access_find_locked(s, table)) != NULL &&
		    a->family_count == k)
			break;
		mutex_unlock(&s->tables_mu);
		bt_free(n);
		bt_free(f);
	}
	*table_access = a->table;
	for (size_t i = 0; i < k; i++) {
		memcpy(n[i], a->families[i].name, sizeof(n[i]));
		f[i] = a->families[i].access;
	}
	mutex_unlock(&s->tables_mu);
	*names = n;
	*families = f;
	*count = k;
	return 0;
}
