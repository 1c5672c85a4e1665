/* api_util.c - the API tests' helpers (api_util.h), compiled once. */
#include <errno.h>
#include <ftw.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api_util.h"

void
sbuf_add(struct sbuf *b, const void *p, size_t n)
{
	if (b->n + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 256;

		while (cap < b->n + n + 1)
			cap *= 2;
		if ((b->p = realloc(b->p, cap)) == NULL)
			tap_bail("out of memory");
		b->cap = cap;
	}
	memcpy(b->p + b->n, p, n);
	b->n += n;
	b->p[b->n] = '\0';
}

void __attribute__((format(printf, 2, 3)))
sbuf_printf(struct sbuf *b, const char *fmt, ...)
{
	char tmp[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n < 0)
		tap_bail("vsnprintf");
	if ((size_t)n >= sizeof(tmp))
		n = sizeof(tmp) - 1;
	sbuf_add(b, tmp, (size_t)n);
}

void
sbuf_escaped(struct sbuf *b, const void *data, size_t n)
{
	const unsigned char *p = data;
	size_t i;

	for (i = 0; i < n; i++) {
		if (p[i] >= 0x20 && p[i] < 0x7f && p[i] != '\\')
			sbuf_add(b, &p[i], 1);
		else
			sbuf_printf(b, "\\x%02x", p[i]);
	}
}

char *
sbuf_take(struct sbuf *b)
{
	char *p;

	if (b->p == NULL)
		sbuf_add(b, "", 0);
	p = b->p;
	b->p = NULL;
	b->n = b->cap = 0;
	return p;
}

void
sbuf_release(struct sbuf *b)
{
	free(b->p);
	b->p = NULL;
	b->n = b->cap = 0;
}

void
diag_text(const char *label, const char *text)
{
	const char *p = text, *nl;
	int lines = 0;

	printf("#   %s:%s\n", label, *text ? "" : " (empty)");
	while (*p != '\0' && lines < 60) {
		nl = strchr(p, '\n');
		if (nl == NULL)
			nl = p + strlen(p);
		printf("#     %.*s\n", (int)(nl - p), p);
		lines++;
		p = *nl ? nl + 1 : nl;
	}
	if (*p != '\0')
		printf("#     ...\n");
	fflush(stdout);
}

struct bt_bytes
bts(const char *s)
{
	return (struct bt_bytes){ s, strlen(s) };
}

struct bt_bytes
btb(const void *p, size_t n)
{
	return (struct bt_bytes){ p, n };
}

bool
bytes_eq(struct bt_bytes a, struct bt_bytes b)
{
	return a.size == b.size &&
	    (a.size == 0 || memcmp(a.data, b.data, a.size) == 0);
}

void *
xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (p == NULL)
		tap_bail("out of memory");
	return p;
}

/*
 * With TABLETFS_TEST_CELL set to a cell's address (tests/cell/
 * test_cell_api.sh), the stores are that cell, emptied of its tables:
 * the same tests run through the client library against tablet
 * servers.  t->env stays NULL there, and a reopen is a new client.
 */
static bool
tstore_cell(struct tstore *t, const struct bt_options *opts)
{
	const char *cell = getenv("TABLETFS_TEST_CELL");
	char **names;
	size_t count;
	int rc;

	if (cell == NULL || *cell == '\0')
		return false;
	memset(t, 0, sizeof(*t));
	snprintf(t->path, sizeof(t->path), "%s", cell);
	if ((rc = bt_store_open(t->path, &t->opts, &t->s)) != 0) {
		diag("bt_store_open %s: %s (%s)", t->path, bt_strerror(rc),
		    bt_error_detail());
		tap_bail("cannot open the cell");
	}
	if (bt_table_list(t->s, &names, &count) != 0)
		tap_bail("cannot list the cell's tables");
	for (size_t i = 0; i < count; i++)
		if (bt_table_delete(t->s, names[i]) != 0)
			tap_bail("cannot empty the cell");
	bt_names_free(names);
	return true;
}

void
tstore_fault(struct tstore *t, const struct bt_options *opts)
{
	int rc;

	if (tstore_cell(t, opts))
		return;
	memset(t, 0, sizeof(*t));
	if (opts != NULL)
		t->opts = *opts;
	if (env_fault_new(&t->env) != 0)
		tap_bail("env_fault_new failed");
	t->opts.env = t->env;
	snprintf(t->path, sizeof(t->path), "/store");
	/* The directory made and synced beforehand, as by mkdir and sync;
	 * test_api_recovery checks a store whose directory the create
	 * made itself. */
	if (env_dir_create(t->env, t->path) != 0 ||
	    env_dir_sync(t->env, "/") != 0)
		tap_bail("cannot make the store directory");
	if ((rc = bt_store_create(t->path, &t->opts)) != 0) {
		diag("bt_store_create: %s (%s)", bt_strerror(rc),
		    bt_error_detail());
		tap_bail("cannot create a store in the fault env");
	}
	if ((rc = bt_store_open(t->path, &t->opts, &t->s)) != 0) {
		diag("bt_store_open: %s (%s)", bt_strerror(rc),
		    bt_error_detail());
		tap_bail("cannot open a store in the fault env");
	}
}

void
tstore_posix(struct tstore *t, const struct bt_options *opts)
{
	const char *tmp = getenv("TMPDIR");
	int rc;

	if (tstore_cell(t, opts))
		return;
	memset(t, 0, sizeof(*t));
	if (opts != NULL)
		t->opts = *opts;
	t->opts.env = NULL;
	snprintf(t->dir, sizeof(t->dir), "%s/tabletfs-test-XXXXXX",
	    tmp != NULL && *tmp != '\0' ? tmp : "/tmp");
	if (mkdtemp(t->dir) == NULL)
		tap_bail("mkdtemp failed");
	snprintf(t->path, sizeof(t->path), "%s/store", t->dir);
	if ((rc = bt_store_create(t->path, &t->opts)) != 0) {
		diag("bt_store_create %s: %s (%s)", t->path, bt_strerror(rc),
		    bt_error_detail());
		tap_bail("cannot create a store");
	}
	if ((rc = bt_store_open(t->path, &t->opts, &t->s)) != 0) {
		diag("bt_store_open %s: %s (%s)", t->path, bt_strerror(rc),
		    bt_error_detail());
		tap_bail("cannot open a store");
	}
}

void
tstore_crash(struct tstore *t)
{
	static const enum env_fault_op kinds[] = {
		ENV_FAULT_APPEND, ENV_FAULT_SYNC, ENV_FAULT_OPEN,
		ENV_FAULT_RENAME,
	};

	for (size_t i = 0; i < 4; i++)
		env_fault_fail_after(t->env, kinds[i], 1, -EIO, true);
	if (t->s != NULL)
		(void)bt_store_close(t->s);
	t->s = NULL;
	env_fault_drop_unsynced(t->env);
	for (size_t i = 0; i < 4; i++)
		env_fault_fail_after(t->env, kinds[i], 0, 0, false);
}

int
tstore_crash_reopen(struct tstore *t)
{
	int rc;

	tstore_crash(t);
	if ((rc = bt_store_open(t->path, &t->opts, &t->s)) != 0)
		t->s = NULL;
	return rc;
}

int
tstore_reopen(struct tstore *t)
{
	int rc, crc;

	crc = bt_store_close(t->s);
	t->s = NULL;
	if ((rc = bt_store_open(t->path, &t->opts, &t->s)) != 0) {
		diag("reopen: %s (%s)", bt_strerror(rc), bt_error_detail());
		t->s = NULL;
		tap_bail("cannot reopen the store");
	}
	return crc;
}

static int
tstore_rm_entry(const char *path, const struct stat *sb, int flag,
    struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

bool
tstore_cell_skip(struct tstore *t, const char *why)
{
	const char *cell = getenv("TABLETFS_TEST_CELL");

	if (cell == NULL || *cell == '\0')
		return false;
	diag("skipped on a cell: the test %s", why);
	tstore_destroy(t);
	return true;
}

void
tstore_destroy(struct tstore *t)
{
	if (t->s != NULL)
		bt_store_close(t->s);
	t->s = NULL;
	env_free(t->env);
	t->env = NULL;
	if (t->dir[0] != '\0')
		nftw(t->dir, tstore_rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	t->dir[0] = '\0';
}

int
put_cell(struct bt_store *s, const char *table, struct bt_bytes row,
    const char *family, struct bt_bytes qualifier, int64_t ts,
    struct bt_bytes value)
{
	struct bt_mutation m = {
		.kind = BT_PUT, .family = family, .qualifier = qualifier,
		.ts = ts, .value = value,
	};

	return bt_mutate_row(s, table, row, &m, 1, NULL, NULL);
}

int
put_str(struct bt_store *s, const char *table, const char *row,
    const char *family, const char *qualifier, int64_t ts, const char *value)
{
	return put_cell(s, table, bts(row), family, bts(qualifier), ts,
	    bts(value));
}

int
del_cell(struct bt_store *s, const char *table, struct bt_bytes row,
    enum bt_mutation_kind kind, const char *family,
    struct bt_bytes qualifier, int64_t ts)
{
	struct bt_mutation m = {
		.kind = kind, .family = family, .qualifier = qualifier,
		.ts = ts,
	};

	return bt_mutate_row(s, table, row, &m, 1, NULL, NULL);
}

int
del_str(struct bt_store *s, const char *table, const char *row,
    enum bt_mutation_kind kind, const char *family, const char *qualifier,
    int64_t ts)
{
	return del_cell(s, table, bts(row), kind, family,
	    bts(qualifier != NULL ? qualifier : ""), ts);
}

void
render_cells(struct sbuf *b, const struct bt_row *r, bool keys_only)
{
	size_t i;

	for (i = 0; i < r->cell_count; i++) {
		const struct bt_cell *c = &r->cells[i];

		sbuf_printf(b, "%s:", c->family != NULL ? c->family : "(null)");
		sbuf_escaped(b, c->qualifier.data, c->qualifier.size);
		sbuf_printf(b, "@%" PRId64 "=", c->ts);
		sbuf_escaped(b, c->value.data, c->value.size);
		if (keys_only)
			sbuf_printf(b, " size=%" PRIu64, c->value_size);
		else if (c->value_size != c->value.size)
			sbuf_printf(b, " (value_size %" PRIu64 "!)",
			    c->value_size);
		sbuf_add(b, "\n", 1);
	}
}

char *
read_text(struct bt_store *s, const char *table, struct bt_bytes row,
    const struct bt_read_options *ro)
{
	struct sbuf b = { 0 };
	struct bt_row *r = NULL;
	int rc;

	rc = bt_read_row(s, table, row, ro, &r);
	if (rc == BT_NOTFOUND) {
		sbuf_printf(&b, "NOTFOUND");
	} else if (rc != 0) {
		sbuf_printf(&b, "ERROR(%d %s)", rc, bt_strerror(rc));
	} else {
		if (r == NULL) {
			sbuf_printf(&b, "NULL ROW");
		} else {
			if (!bytes_eq(r->key, row))
				sbuf_printf(&b, "WRONG KEY ");
			if (r->cell_count == 0)
				sbuf_printf(&b, "EMPTY ROW");
			render_cells(&b, r, ro != NULL && ro->keys_only);
			bt_row_free(r);
		}
	}
	return sbuf_take(&b);
}

char *
read_text_str(struct bt_store *s, const char *table, const char *row,
    const struct bt_read_options *ro)
{
	return read_text(s, table, bts(row), ro);
}

int
scan_render(struct bt_store *s, const char *table,
    const struct bt_scan_options *so, bool cells, struct sbuf *b)
{
	struct bt_scan *sc = NULL;
	struct bt_row *r;
	int rc;

	if ((rc = bt_scan_open(s, table, so, &sc)) != 0)
		return rc;
	for (;;) {
		r = NULL;
		if ((rc = bt_scan_next(sc, &r)) != 0 || r == NULL)
			break;
		sbuf_add(b, "[", 1);
		sbuf_escaped(b, r->key.data, r->key.size);
		sbuf_add(b, "]\n", 2);
		if (cells && r->cell_count == 0)
			sbuf_printf(b, "EMPTY ROW\n");
		if (cells)
			render_cells(b, r, so != NULL && so->read.keys_only);
		bt_row_free(r);
	}
	bt_scan_close(sc);
	return rc == BT_DONE ? 0 : rc != 0 ? rc : -EPROTO;
}

/* scan_render()'s text, with "ERROR(rc)" after it on a failure.  The
 * caller frees the text. */
static char *
scan_render_text(struct bt_store *s, const char *table,
    const struct bt_scan_options *so, bool cells)
{
	struct sbuf b = { 0 };
	int rc;

	if ((rc = scan_render(s, table, so, cells, &b)) != 0)
		sbuf_printf(&b, "ERROR(%d %s)", rc, bt_strerror(rc));
	return sbuf_take(&b);
}

char *
scan_text(struct bt_store *s, const char *table,
    const struct bt_scan_options *so)
{
	return scan_render_text(s, table, so, true);
}

char *
scan_keys(struct bt_store *s, const char *table,
    const struct bt_scan_options *so)
{
	return scan_render_text(s, table, so, false);
}

int
get_newest(struct bt_store *s, const char *table, struct bt_bytes row,
    const char *family, struct bt_bytes qualifier, char **val, size_t *len,
    int64_t *ts)
{
	struct bt_column col = {
		.family = family, .has_qualifier = true,
		.qualifier = qualifier,
	};
	struct bt_read_options ro = {
		.columns = &col, .column_count = 1, .cells_per_column = 1,
	};
	struct bt_row *r = NULL;
	int rc;

	if ((rc = bt_read_row(s, table, row, &ro, &r)) != 0)
		return rc;
	if (r == NULL || r->cell_count != 1) {
		diag("get_newest: %zu cells for one column with "
		    "cells_per_column=1", r != NULL ? r->cell_count : 0);
		if (r != NULL)
			bt_row_free(r);
		return -EPROTO;
	}
	if (val != NULL) {
		*val = xmalloc(r->cells[0].value.size + 1);
		if (r->cells[0].value.size > 0)
			memcpy(*val, r->cells[0].value.data,
			    r->cells[0].value.size);
		(*val)[r->cells[0].value.size] = '\0';
	}
	if (len != NULL)
		*len = r->cells[0].value.size;
	if (ts != NULL)
		*ts = r->cells[0].ts;
	bt_row_free(r);
	return 0;
}

char *
newest_text(struct bt_store *s, const char *table, const char *row,
    const char *family, const char *qualifier)
{
	struct sbuf b = { 0 };
	char *val = NULL;
	size_t len = 0;
	int64_t ts = 0;
	int rc;

	rc = get_newest(s, table, bts(row), family, bts(qualifier), &val,
	    &len, &ts);
	if (rc == BT_NOTFOUND)
		sbuf_printf(&b, "NOTFOUND");
	else if (rc != 0)
		sbuf_printf(&b, "ERROR(%d %s)", rc, bt_strerror(rc));
	else {
		sbuf_escaped(&b, val, len);
		sbuf_printf(&b, "@%" PRId64, ts);
	}
	free(val);
	return sbuf_take(&b);
}

int
make_table(struct bt_store *s, const char *table, const char *const *fams)
{
	struct bt_family_spec specs[16];
	char names[16][80];
	size_t n = 0;
	const char *eq;

	for (; fams != NULL && fams[n] != NULL && n < 16; n++) {
		eq = strchr(fams[n], '=');
		specs[n].group = NULL;
		if (eq == NULL) {
			specs[n].name = fams[n];
			specs[n].gc_policy = NULL;
		} else {
			snprintf(names[n], sizeof(names[n]), "%.*s",
			    (int)(eq - fams[n]), fams[n]);
			specs[n].name = names[n];
			specs[n].gc_policy = eq + 1;
		}
	}
	return bt_table_create(s, table, specs, n, NULL, 0, 0);
}
