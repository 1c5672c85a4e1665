/*
 * ctl_util.c - what every verb uses: its error and usage messages, the
 * store's opening, argument parsing, and the two escaped forms tabletctl's
 * input and output share (tabletctl(1), ESCAPES): names (row keys and
 * qualifiers) as the mount spells them, values with \xNN.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ctl/ctl.h"
#include "util/buf.h"
#include "util/names.h"

/* How long a verb waits for another process to release the store. */
#define LOCK_WAIT_MS	5000
#define LOCK_POLL_MS	50

static const char *
verb_name(const struct ctl *c)
{
	return c->verb != NULL ? c->verb->name : "";
}

int
ctl_fail(struct ctl *c, int rc, const char *fmt, ...)
{
	const char *detail = bt_error_detail();
	va_list ap;

	fprintf(c->err, "tabletctl: %s: ", verb_name(c));
	if (fmt != NULL) {
		va_start(ap, fmt);
		vfprintf(c->err, fmt, ap);
		va_end(ap);
		fputs(": ", c->err);
	}
	if (detail[0] != '\0' && strstr(detail, bt_strerror(rc)) != NULL)
		fprintf(c->err, "%s\n", detail);
	else if (detail[0] != '\0')
		fprintf(c->err, "%s (%s)\n", detail, bt_strerror(rc));
	else
		fprintf(c->err, "%s\n", bt_strerror(rc));
	return CTL_FAIL;
}

int
ctl_error(struct ctl *c, const char *fmt, ...)
{
	va_list ap;

	fprintf(c->err, "tabletctl: %s: ", verb_name(c));
	va_start(ap, fmt);
	vfprintf(c->err, fmt, ap);
	va_end(ap);
	putc('\n', c->err);
	return CTL_FAIL;
}

int
ctl_usage(struct ctl *c, const char *fmt, ...)
{
	va_list ap;

	if (fmt != NULL) {
		fprintf(c->err, "tabletctl: %s: ", verb_name(c));
		va_start(ap, fmt);
		vfprintf(c->err, fmt, ap);
		va_end(ap);
		putc('\n', c->err);
	}
	if (c->verb != NULL)
		fprintf(c->err, "usage: tabletctl [-s STORE] %s%s%s\n",
		    c->verb->name, c->verb->args[0] ? " " : "",
		    c->verb->args);
	else
		fprintf(c->err, "usage: tabletctl [-s STORE] VERB [ARGS...] "
		    "(tabletctl help: the verbs)\n");
	return CTL_USAGE;
}

/*
 * A daemon that was just unmounted stops answering its socket before it
 * has flushed and released the lock: give a holder a few seconds to let
 * go, as a command typed right after fusermount3 -u expects.
 */
int
ctl_store_open(struct ctl *c, const struct bt_options *opts)
{
	int rc, waited;

	for (waited = 0;; waited += LOCK_POLL_MS) {
		bt_error_clear();
		rc = bt_store_open(c->store_path, opts, &c->store);
		if (rc != -EWOULDBLOCK || waited >= LOCK_WAIT_MS)
			return rc;
		nanosleep(&(struct timespec){ 0, LOCK_POLL_MS * 1000000L },
		    NULL);
	}
}

void *
ctl_calloc(size_t count, size_t size)
{
	return calloc(count ? count : 1, size ? size : 1);
}

void *
ctl_xcalloc(size_t count, size_t size)
{
	void *p;

	if ((p = calloc(count ? count : 1, size ? size : 1)) == NULL) {
		fprintf(stderr, "tabletctl: out of memory\n");
		exit(CTL_FAIL);
	}
	return p;
}

void *
ctl_xrealloc(void *p, size_t count, size_t size)
{
	/* Never size 0, which realloc would take as a free. */
	if ((p = reallocarray(p, count ? count : 1, size ? size : 1)) == NULL) {
		fprintf(stderr, "tabletctl: out of memory\n");
		exit(CTL_FAIL);
	}
	return p;
}

/*
 * Not libbsd's strunvis()/strvis(): vis(3) writes bytes as octal \ddd or
 * \M- forms and its decoder refuses what it does not know, where values
 * here are spelled \xNN as cbt spells them, the same in import files and
 * in tabletctl's output, and a lone backslash on the command line stands
 * for itself.
 */
int
esc_decode(char *s, size_t n, bool strict, size_t *out)
{
	size_t i = 0, o = 0;
	int hi, lo;

	while (i < n) {
		if (s[i] != '\\') {
			s[o++] = s[i++];
			continue;
		}
		if (i + 1 < n && s[i + 1] == '\\') {
			s[o++] = '\\';
			i += 2;
		} else if (i + 3 < n && s[i + 1] == 'x' &&
		    (hi = names_hex_value((unsigned char)s[i + 2])) >= 0 &&
		    (lo = names_hex_value((unsigned char)s[i + 3])) >= 0) {
			s[o++] = (char)(hi << 4 | lo);
			i += 4;
		} else if (strict) {
			return -EINVAL;
		} else
			s[o++] = s[i++];
	}
	*out = o;
	return 0;
}

struct bt_bytes
ctl_arg_bytes(char *s)
{
	struct bt_bytes b;
	size_t n;

	esc_decode(s, strlen(s), false, &n);
	b.data = s;
	b.size = n;
	return b;
}

bool
ctl_arg_name(char *s, struct bt_bytes *out)
{
	size_t n = strlen(s);

	if (n > 0 && names_decode_in_place(s, &n) < 0)
		return false;
	out->data = s;
	out->size = n;
	return true;
}

/*
 * Without memory for the canonical spelling, every byte is written %XX:
 * a valid spelling of the same bytes, so the output still reads back.
 * vis(3)'s VIS_HTTPSTYLE also writes %XX, but not by util/names.h's rules
 * (valid UTF-8 stands for itself; a leading '.' and the empty name are
 * escaped), which tabletctl must share with the mount.
 */
void
ctl_name_write(FILE *f, const void *p, size_t n)
{
	static const char hex[] = "0123456789ABCDEF";
	const unsigned char *b = p;
	struct buf name;

	buf_init(&name);
	if (names_encode(slice_make(p, n), &name) == 0)
		fwrite(name.p, 1, name.n, f);
	else if (n == 0)
		putc('%', f);
	else
		for (size_t i = 0; i < n; i++)
			fprintf(f, "%%%c%c", hex[b[i] >> 4], hex[b[i] & 15]);
	buf_release(&name);
}

void
esc_write(FILE *f, const void *p, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *b = p;
	size_t i = 0, run;

	while (i < n) {
		/* Copy a run of bytes that stand for themselves at once. */
		for (run = i; run < n && b[run] >= 0x20 && b[run] <= 0x7e &&
		    b[run] != '\\'; run++)
			;
		if (run > i) {
			fwrite(b + i, 1, run - i, f);
			i = run;
			continue;
		}
		if (b[i] == '\\')
			fputs("\\\\", f);
		else {
			putc('\\', f);
			putc('x', f);
			putc(hex[b[i] >> 4], f);
			putc(hex[b[i] & 15], f);
		}
		i++;
	}
}

char *
ctl_keyword(char *arg, const char *key)
{
	size_t n = strlen(key);

	if (strncmp(arg, key, n) == 0 && arg[n] == '=')
		return arg + n + 1;
	return NULL;
}

bool
ctl_parse_u64(const char *s, uint64_t max, uint64_t *out)
{
	uint64_t v = 0;

	if (*s == '\0')
		return false;
	for (; *s != '\0'; s++) {
		if (*s < '0' || *s > '9')
			return false;
		if (v > (max - (uint64_t)(*s - '0')) / 10)
			return false;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	*out = v;
	return true;
}

bool
ctl_parse_ts(const char *s, int64_t *ts)
{
	uint64_t v;

	if (!ctl_parse_u64(s, INT64_MAX, &v))
		return false;
	*ts = (int64_t)v;
	return true;
}

bool
ctl_parse_i64(const char *s, int64_t *out)
{
	uint64_t v;

	if (*s == '-') {
		if (!ctl_parse_u64(s + 1, (uint64_t)INT64_MAX + 1, &v))
			return false;
		*out = v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v;
		return true;
	}
	if (*s == '+')
		s++;
	if (!ctl_parse_u64(s, INT64_MAX, &v))
		return false;
	*out = (int64_t)v;
	return true;
}

bool
ctl_parse_column(char *arg, const char **family, struct bt_bytes *q)
{
	char *colon;
	struct bt_bytes b;

	if ((colon = strchr(arg, ':')) == NULL || colon == arg)
		return false;
	if (!ctl_arg_name(colon + 1, &b))
		return false;
	*colon = '\0';
	*family = arg;
	*q = b;
	return true;
}

bool
ctl_parse_cell(char *arg, struct bt_mutation *m)
{
	char *colon, *eq, *at, *p;
	int64_t ts = BT_TS_SERVER;

	if ((colon = strchr(arg, ':')) == NULL || colon == arg ||
	    (eq = strchr(colon + 1, '=')) == NULL)
		return false;
	/* The last '@' ends the value if only digits follow it. */
	if ((at = strrchr(eq + 1, '@')) != NULL) {
		for (p = at + 1; *p >= '0' && *p <= '9'; p++)
			;
		if (*p != '\0' || !ctl_parse_ts(at + 1, &ts))
			at = NULL;
	}
	if (at != NULL)
		*at = '\0';
	*eq = '\0';
	memset(m, 0, sizeof(*m));
	m->kind = BT_PUT;
	m->ts = ts;
	if (!ctl_parse_column(arg, &m->family, &m->qualifier)) {
		*eq = '=';
		if (at != NULL)
			*at = '@';
		return false;
	}
	m->value = ctl_arg_bytes(eq + 1);
	return true;
}

int
ctl_parse_columns(char *list, struct bt_column **cols, size_t *count,
    size_t *regex_count)
{
	struct bt_column *c;
	size_t n = 1, i = 0, r = 0;
	char *item, *next, *colon;

	for (const char *p = list; *p != '\0'; p++)
		if (*p == ',')
			n++;
	if ((c = ctl_calloc(n, sizeof(*c))) == NULL)
		return -ENOMEM;
	for (item = list; item != NULL; item = next) {
		if ((next = strchr(item, ',')) != NULL)
			*next++ = '\0';
		if (*item == '\0' || *item == ':')
			goto fail;
		colon = strchr(item, ':');
		if (colon != NULL && strpbrk(colon + 1, CTL_REGEX_CHARS)) {
			/* Regexes fill the array from its end. */
			struct bt_column *rc = &c[n - 1 - r++];

			*colon = '\0';
			rc->family = item;
			rc->has_qualifier = true;
			rc->qualifier.data = colon + 1;
			rc->qualifier.size = strlen(colon + 1);
			continue;
		}
		if (colon != NULL) {
			if (!ctl_parse_column(item, &c[i].family,
			    &c[i].qualifier))
				goto fail;
			c[i].has_qualifier = true;
		} else
			c[i].family = item;
		i++;
	}
	/* In item order: the regexes were put in backwards. */
	for (size_t a = n - r, b = n - 1; a < b; a++, b--) {
		struct bt_column t = c[a];

		c[a] = c[b];
		c[b] = t;
	}
	*cols = c;
	*count = i;
	*regex_count = r;
	return 0;
fail:
	free(c);
	return -EINVAL;
}

void
ctl_row_print(FILE *f, const struct bt_row *r)
{
	fputs("----\n", f);
	ctl_name_write(f, r->key.data, r->key.size);
	putc('\n', f);
	for (size_t i = 0; i < r->cell_count; i++) {
		const struct bt_cell *cell = &r->cells[i];

		fprintf(f, "  %s:", cell->family);
		ctl_name_write(f, cell->qualifier.data, cell->qualifier.size);
		fprintf(f, " @ %" PRId64 "\n    \"", cell->ts);
		esc_write(f, cell->value.data, cell->value.size);
		fputs("\"\n", f);
	}
}
