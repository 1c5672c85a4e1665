/*
 * storage.c - a cell's storage, parsed and opened (storage.h).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "util/env.h"
#include "util/error.h"
#include "util/storage.h"

bool
storage_is_rados(const char *s)
{
	return strncmp(s, STORAGE_RADOS_SCHEME,
	    strlen(STORAGE_RADOS_SCHEME)) == 0;
}

/* Whether s[0..n) is a word: 1-63 of [A-Za-z0-9_.-], not "." or "..". */
static bool
word_ok(const char *s, size_t n)
{
	if (n == 0 || n > STORAGE_WORD_MAX || (n == 1 && s[0] == '.') ||
	    (n == 2 && s[0] == '.' && s[1] == '.'))
		return false;
	for (size_t i = 0; i < n; i++)
		if (strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
		    "0123456789_.-", s[i]) == NULL || s[i] == '\0')
			return false;
	return true;
}

/* One "key=value" of the query, s[0..n), into st. */
static int
query_item(const char *url, const char *s, size_t n, struct storage *st)
{
	const char *eq = memchr(s, '=', n);
	size_t klen, vlen;

	if (eq == NULL)
		return bt_error_set(-EINVAL, "storage %s: '%.*s' is not "
		    "KEY=VALUE", url, (int)n, s);
	klen = (size_t)(eq - s);
	vlen = n - klen - 1;
	if (klen == 4 && memcmp(s, "conf", 4) == 0) {
		if (st->conf[0] != '\0')
			return bt_error_set(-EINVAL, "storage %s: conf given "
			    "twice", url);
		if (vlen == 0 || eq[1] != '/' || vlen >= sizeof(st->conf) ||
		    memchr(eq + 1, '#', vlen) != NULL ||
		    memchr(eq + 1, '%', vlen) != NULL)
			return bt_error_set(-EINVAL, "storage %s: conf must "
			    "be an absolute path (without '#' or '%%')", url);
		memcpy(st->conf, eq + 1, vlen);
		st->conf[vlen] = '\0';
		return 0;
	}
	if (klen == 2 && memcmp(s, "id", 2) == 0) {
		if (st->client_id[0] != '\0')
			return bt_error_set(-EINVAL, "storage %s: id given "
			    "twice", url);
		if (!word_ok(eq + 1, vlen))
			return bt_error_set(-EINVAL, "storage %s: id must be "
			    "1-%d of [A-Za-z0-9_.-] (client.ID's ID)", url,
			    STORAGE_WORD_MAX);
		memcpy(st->client_id, eq + 1, vlen);
		st->client_id[vlen] = '\0';
		return 0;
	}
	return bt_error_set(-EINVAL, "storage %s: unknown key '%.*s' (conf "
	    "and id are known)", url, (int)klen, s);
}

/* "rados://POOL[/NAME][?QUERY]" into st. */
static int
rados_parse(const char *url, struct storage *st)
{
	const char *p = url + strlen(STORAGE_RADOS_SCHEME);
	const char *query = strchr(p, '?');
	const char *end = query != NULL ? query : p + strlen(p);
	const char *slash = memchr(p, '/', (size_t)(end - p));
	const char *pool_end = slash != NULL ? slash : end;
	const char *c, *next;
	size_t n;
	int rc;

	st->rados = true;
	if (!word_ok(p, (size_t)(pool_end - p)))
		return bt_error_set(-EINVAL, "storage %s: the pool must be "
		    "1-%d of [A-Za-z0-9_.-] (rados://POOL[/NAME][?conf=FILE"
		    "&id=CLIENT])", url, STORAGE_WORD_MAX);
	memcpy(st->pool, p, (size_t)(pool_end - p));
	st->pool[pool_end - p] = '\0';
	if (slash == NULL) {
		snprintf(st->path, sizeof(st->path), "/%s",
		    STORAGE_RADOS_NAME);
	} else {
		n = (size_t)(end - slash);
		if (n >= sizeof(st->path))
			return bt_error_set(-EINVAL, "storage %s: the name is "
			    "too long", url);
		for (c = slash + 1; c <= end; c = next + 1) {
			next = memchr(c, '/', (size_t)(end - c));
			if (next == NULL)
				next = end;
			if (!word_ok(c, (size_t)(next - c)))
				return bt_error_set(-EINVAL, "storage %s: each "
				    "part of the name must be 1-%d of "
				    "[A-Za-z0-9_.-], not . or ..", url,
				    STORAGE_WORD_MAX);
		}
		memcpy(st->path, slash, n);
		st->path[n] = '\0';
	}
	if (query == NULL)
		return 0;
	for (c = query + 1; ; c = next + 1) {
		next = strchr(c, '&');
		n = next != NULL ? (size_t)(next - c) : strlen(c);
		if ((rc = query_item(url, c, n, st)) < 0)
			return rc;
		if (next == NULL)
			return 0;
	}
}

int
storage_parse(const char *s, struct storage *out)
{
	struct storage st;
	int rc;

	memset(&st, 0, sizeof(st));
	if (storage_is_rados(s)) {
		if ((rc = rados_parse(s, &st)) < 0)
			return rc;
	} else if (strstr(s, "://") != NULL) {
		return bt_error_set(-EINVAL, "storage %s: unknown scheme "
		    "(a directory or rados://POOL)", s);
	} else {
		if (s[0] != '/')
			return bt_error_set(-EINVAL, "storage %s: give an "
			    "absolute path, the same for every process of the "
			    "cell", s);
		if (strlen(s) >= sizeof(st.path))
			return bt_error_set(-EINVAL, "storage %.64s...: too "
			    "long", s);
		snprintf(st.path, sizeof(st.path), "%s", s);
	}
	*out = st;
	return 0;
}

int
storage_env_new(const struct storage *st, struct env **out)
{
	if (!st->rados)
		return env_posix_new(out);
	return env_rados_new(st->conf[0] != '\0' ? st->conf : NULL, st->pool,
	    st->client_id[0] != '\0' ? st->client_id : NULL, out);
}
