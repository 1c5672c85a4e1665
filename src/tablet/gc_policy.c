/*
 * gc_policy.c - parse, format and evaluate garbage-collection policies.
 *
 * The parser is a recursive descent over tokens: words, "(", ")", "=",
 * "and"/"&&" and "or"/"||".  A policy is a tree of leaves (never,
 * maxversions, maxage) under n-ary and/or nodes; a node never has a child
 * of its own kind, so that every spelling of one policy parses to the same
 * tree and formats to the same text.
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "tablet/gc_policy.h"
#include "util/alloc.h"
#include "util/error.h"
#include "util/units.h"

enum gc_kind {
	GC_NEVER,
	GC_MAXVERSIONS,
	GC_MAXAGE,
	GC_AND,
	GC_OR,
};

struct gc_policy {
	enum gc_kind kind;
	uint64_t limit;			/* maxversions: N; maxage: micros */
	size_t nchild;			/* and, or: two or more children */
	struct gc_policy **child;
};

enum gc_token {
	TOK_END,
	TOK_WORD,
	TOK_LPAREN,
	TOK_RPAREN,
	TOK_EQUALS,
	TOK_AND,
	TOK_OR,
	TOK_BAD,			/* a lone '&' or '|' */
};

struct gc_parser {
	const char *next;		/* where the token after tok starts */
	enum gc_token tok;
	const char *tok_start;
	size_t tok_len;
	int depth;			/* open parentheses */
};

static bool
is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' ||
	    c == '\f';
}

static bool
is_special(char c)
{
	return c == '(' || c == ')' || c == '=' || c == '&' || c == '|';
}

/* Where a word ends when quoting it in an error detail. */
static bool
is_word_end(char c)
{
	return c == '\0' || is_blank(c) || c == '(' || c == ')';
}

/* ASCII case-insensitive match of n bytes at s against the keyword kw. */
static bool
keyword_eq(const char *s, size_t n, const char *kw)
{
	size_t i;

	if (strlen(kw) != n)
		return false;
	for (i = 0; i < n; i++) {
		char c = s[i];

		if (c >= 'A' && c <= 'Z')
			c = (char)(c - 'A' + 'a');
		if (c != kw[i])
			return false;
	}
	return true;
}

static bool
gc_word_is(const struct gc_parser *ps, const char *kw)
{
	return ps->tok == TOK_WORD &&
	    keyword_eq(ps->tok_start, ps->tok_len, kw);
}

/* Read the next token into ps->tok. */
static void
gc_lex(struct gc_parser *ps)
{
	const char *p = ps->next;
	size_t n = 1;

	while (is_blank(*p))
		p++;
	ps->tok_start = p;
	switch (*p) {
	case '\0':
		ps->tok = TOK_END;
		n = 0;
		break;
	case '(':
		ps->tok = TOK_LPAREN;
		break;
	case ')':
		ps->tok = TOK_RPAREN;
		break;
	case '=':
		ps->tok = TOK_EQUALS;
		break;
	case '&':
	case '|':
		if (p[1] == p[0]) {
			ps->tok = *p == '&' ? TOK_AND : TOK_OR;
			n = 2;
		} else
			ps->tok = TOK_BAD;
		break;
	default:
		for (n = 0; p[n] != '\0' && !is_blank(p[n]) &&
		    !is_special(p[n]); n++)
			;
		if (keyword_eq(p, n, "and"))
			ps->tok = TOK_AND;
		else if (keyword_eq(p, n, "or"))
			ps->tok = TOK_OR;
		else
			ps->tok = TOK_WORD;
		break;
	}
	ps->tok_len = n;
	ps->next = p + n;
}

/*
 * Record "gc policy: MESSAGE at 'WORD'" and return -EINVAL.  WORD is what
 * the user sees at `at`: a parenthesis, or the text up to the next blank or
 * parenthesis, shortened and with unprintable bytes as \xHH so the detail
 * stays one line; at the end of the text it is "end of input".
 */
static int __attribute__((format(printf, 2, 3)))
gc_error_at(const char *at, const char *fmt, ...)
{
	char msg[160], word[200];
	size_t i = 0, n = 0;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (*at == '\0')
		return bt_error_set(-EINVAL, "gc policy: %s at end of input",
		    msg);
	if (*at == '(' || *at == ')')
		return bt_error_set(-EINVAL, "gc policy: %s at '%c'", msg, *at);
	for (; !is_word_end(at[i]) && i < 40; i++) {
		unsigned char c = (unsigned char)at[i];

		if (c >= 0x20 && c < 0x7f && c != '\'')
			word[n++] = (char)c;
		else
			n += (size_t)snprintf(word + n, sizeof(word) - n,
			    "\\x%02X", c);
	}
	if (!is_word_end(at[i]))
		n += (size_t)snprintf(word + n, sizeof(word) - n, "...");
	word[n] = '\0';
	return bt_error_set(-EINVAL, "gc policy: %s at '%s'", msg, word);
}

static struct gc_policy *
gc_node_new(enum gc_kind kind)
{
	struct gc_policy *p = bt_calloc(1, sizeof(*p));

	if (p != NULL)
		p->kind = kind;
	return p;
}

void
gc_policy_free(struct gc_policy *p)
{
	size_t i;

	if (p == NULL)
		return;
	for (i = 0; i < p->nchild; i++)
		gc_policy_free(p->child[i]);
	bt_free(p->child);
	bt_free(p);
}

/*
 * Append p to the children of the and/or node parent.  A p of parent's own
 * kind gives its children instead (and is freed), so "a and (b and c)"
 * becomes the same tree as "a and b and c".  On -ENOMEM p stays the
 * caller's.
 */
static int
gc_adopt(struct gc_policy *parent, struct gc_policy *p)
{
	bool splice = p->kind == parent->kind;
	size_t add = splice ? p->nchild : 1;
	struct gc_policy **child;

	child = bt_realloc(parent->child,
	    (parent->nchild + add) * sizeof(*child));
	if (child == NULL)
		return -ENOMEM;
	parent->child = child;
	if (splice) {
		memcpy(child + parent->nchild, p->child, add * sizeof(*child));
		p->nchild = 0;
		gc_policy_free(p);
	} else
		child[parent->nchild] = p;
	parent->nchild += add;
	return 0;
}

/* maxversions: a decimal count from 1 to INT64_MAX, nothing else. */
static int
gc_parse_count(const char *s, size_t n, uint64_t *out)
{
	uint64_t v = 0;
	size_t i;

	if (n == 0)
		return -EINVAL;
	for (i = 0; i < n; i++) {
		uint64_t d;

		if (s[i] < '0' || s[i] > '9')
			return -EINVAL;
		d = (uint64_t)(s[i] - '0');
		if (v > (INT64_MAX - d) / 10)
			return -EINVAL;
		v = v * 10 + d;
	}
	if (v == 0)
		return -EINVAL;
	*out = v;
	return 0;
}

/* maxversions=N or maxage=DURATION, with blanks allowed around the '='. */
static int
gc_parse_rule(struct gc_parser *ps, enum gc_kind kind, struct gc_policy **out)
{
	const char *name = kind == GC_MAXAGE ? "maxage" : "maxversions";
	struct gc_policy *p;
	const char *value;
	uint64_t limit;
	char *copy;
	int rc;

	gc_lex(ps);
	if (ps->tok != TOK_EQUALS)
		return gc_error_at(ps->tok_start, "expected '=' after %s",
		    name);
	gc_lex(ps);
	if (ps->tok != TOK_WORD)
		return gc_error_at(ps->tok_start, "expected a value after %s=",
		    name);
	value = ps->tok_start;
	if (kind == GC_MAXVERSIONS) {
		if (gc_parse_count(value, ps->tok_len, &limit) < 0)
			return gc_error_at(value, "maxversions needs a whole "
			    "number from 1 to %" PRId64, INT64_MAX);
	} else {
		if ((copy = bt_malloc(ps->tok_len + 1)) == NULL)
			return -ENOMEM;
		memcpy(copy, value, ps->tok_len);
		copy[ps->tok_len] = '\0';
		rc = parse_duration(copy, &limit);
		bt_free(copy);
		if (rc == -ERANGE)
			return gc_error_at(value, "maxage too long");
		if (rc < 0 || limit == 0)
			return gc_error_at(value, "maxage needs a duration "
			    "above zero with a unit s, m, h or d");
	}
	if ((p = gc_node_new(kind)) == NULL)
		return -ENOMEM;
	p->limit = limit;
	gc_lex(ps);
	*out = p;
	return 0;
}

static int gc_parse_chain(struct gc_parser *, enum gc_kind,
    struct gc_policy **);

/* factor := maxversions=N | maxage=DURATION | "(" expr ")" */
static int
gc_parse_factor(struct gc_parser *ps, struct gc_policy **out)
{
	const char *at = ps->tok_start;
	struct gc_policy *p;
	int rc;

	switch (ps->tok) {
	case TOK_LPAREN:
		if (ps->depth == GC_POLICY_MAX_DEPTH)
			return gc_error_at(at, "parentheses nested deeper "
			    "than %d", GC_POLICY_MAX_DEPTH);
		ps->depth++;
		gc_lex(ps);
		if ((rc = gc_parse_chain(ps, GC_OR, &p)) < 0)
			return rc;
		if (ps->tok != TOK_RPAREN) {
			gc_policy_free(p);
			return gc_error_at(ps->tok_start, "expected ')'");
		}
		ps->depth--;
		gc_lex(ps);
		*out = p;
		return 0;
	case TOK_WORD:
		if (gc_word_is(ps, "maxversions"))
			return gc_parse_rule(ps, GC_MAXVERSIONS, out);
		if (gc_word_is(ps, "maxage"))
			return gc_parse_rule(ps, GC_MAXAGE, out);
		if (gc_word_is(ps, "never"))
			return gc_error_at(at, "'never' cannot be combined "
			    "with other rules");
		break;
	case TOK_END:
		return gc_error_at(at, "expected a rule");
	default:
		break;
	}
	return gc_error_at(at,
	    "expected maxversions=N, maxage=DURATION or '('");
}

/*
 * expr := term ("or" term)*  (kind GC_OR)
 * term := factor ("and" factor)*  (kind GC_AND)
 * A chain of one operand is that operand itself.
 */
static int
gc_parse_chain(struct gc_parser *ps, enum gc_kind kind, struct gc_policy **out)
{
	enum gc_token op = kind == GC_OR ? TOK_OR : TOK_AND;
	struct gc_policy *node, *p;
	int rc;

	if ((node = gc_node_new(kind)) == NULL)
		return -ENOMEM;
	for (;;) {
		if (kind == GC_OR)
			rc = gc_parse_chain(ps, GC_AND, &p);
		else
			rc = gc_parse_factor(ps, &p);
		if (rc < 0)
			goto out_node;
		if ((rc = gc_adopt(node, p)) < 0)
			goto out_operand;
		if (ps->tok != op)
			break;
		gc_lex(ps);
	}
	if (node->nchild == 1) {
		p = node->child[0];
		node->nchild = 0;
		gc_policy_free(node);
		node = p;
	}
	*out = node;
	return 0;
out_operand:
	gc_policy_free(p);
out_node:
	gc_policy_free(node);
	return rc;
}

int
gc_policy_parse(const char *text, struct gc_policy **out)
{
	struct gc_parser ps = { .next = text };
	struct gc_policy *p;
	int rc;

	gc_lex(&ps);
	if (ps.tok == TOK_END)
		return bt_error_set(-EINVAL, "gc policy: empty");
	if (gc_word_is(&ps, "never")) {
		gc_lex(&ps);
		if (ps.tok != TOK_END)
			return gc_error_at(ps.tok_start, "'never' cannot be "
			    "combined with other rules");
		if ((p = gc_node_new(GC_NEVER)) == NULL)
			return -ENOMEM;
		*out = p;
		return 0;
	}
	if ((rc = gc_parse_chain(&ps, GC_OR, &p)) < 0)
		return rc;
	if (ps.tok != TOK_END) {
		gc_policy_free(p);
		return gc_error_at(ps.tok_start, ps.tok == TOK_RPAREN ?
		    "unmatched ')'" : "expected 'and', 'or' or end of input");
	}
	*out = p;
	return 0;
}

/* snprintf-style output: count everything, store what fits. */
struct gc_out {
	char *dst;
	size_t size;
	size_t len;
};

static void
gc_out_str(struct gc_out *o, const char *s)
{
	for (; *s != '\0'; s++, o->len++)
		if (o->len + 1 < o->size)
			o->dst[o->len] = *s;
}

/*
 * Children of an and/or node are never of its own kind, so every compound
 * child is the other kind and gets parentheses: needed for an "or" inside
 * an "and", and kept for an "and" inside an "or" so cbt reads it the same.
 */
static void
gc_format_node(struct gc_out *o, const struct gc_policy *p)
{
	char num[UNITS_STRLEN];
	size_t i;

	switch (p->kind) {
	case GC_NEVER:
		gc_out_str(o, "never");
		break;
	case GC_MAXVERSIONS:
		snprintf(num, sizeof(num), "%" PRIu64, p->limit);
		gc_out_str(o, "maxversions=");
		gc_out_str(o, num);
		break;
	case GC_MAXAGE:
		gc_out_str(o, "maxage=");
		gc_out_str(o, format_duration(num, sizeof(num), p->limit));
		break;
	case GC_AND:
	case GC_OR:
		for (i = 0; i < p->nchild; i++) {
			const struct gc_policy *c = p->child[i];
			bool paren = c->kind == GC_AND || c->kind == GC_OR;

			assert(c->kind != p->kind);

			if (i > 0)
				gc_out_str(o, p->kind == GC_AND ? " and " :
				    " or ");
			if (paren)
				gc_out_str(o, "(");
			gc_format_node(o, c);
			if (paren)
				gc_out_str(o, ")");
		}
		break;
	}
}

size_t
gc_policy_format(const struct gc_policy *p, char *dst, size_t size)
{
	struct gc_out o = { .dst = dst, .size = size, .len = 0 };

	gc_format_node(&o, p);
	if (size > 0)
		dst[o.len < size ? o.len : size - 1] = '\0';
	return o.len;
}

bool
gc_policy_condemns(const struct gc_policy *p, uint64_t index, int64_t ts,
    int64_t now)
{
	size_t i;

	switch (p->kind) {
	case GC_NEVER:
		return false;
	case GC_MAXVERSIONS:
		return index >= p->limit;
	case GC_MAXAGE:
		/* now - ts may overflow int64_t; unsigned it is exact. */
		return ts < now && (uint64_t)now - (uint64_t)ts > p->limit;
	case GC_AND:
		for (i = 0; i < p->nchild; i++)
			if (!gc_policy_condemns(p->child[i], index, ts, now))
				return false;
		return true;
	case GC_OR:
		for (i = 0; i < p->nchild; i++)
			if (gc_policy_condemns(p->child[i], index, ts, now))
				return true;
		return false;
	}
	return false;
}

/*
 * Every rule condemns more the older and deeper a version is, so a policy
 * can condemn something exactly when it condemns the deepest, oldest
 * version there could be.
 */
bool
gc_policy_uses_age(const struct gc_policy *p)
{
	if (p == NULL)
		return false;
	if (p->kind == GC_MAXAGE)
		return true;
	for (size_t i = 0; i < p->nchild; i++)
		if (gc_policy_uses_age(p->child[i]))
			return true;
	return false;
}

bool
gc_policy_keeps_all(const struct gc_policy *p)
{
	return !gc_policy_condemns(p, UINT64_MAX, INT64_MIN, INT64_MAX);
}

uint64_t
gc_policy_version_limit(const struct gc_policy *p)
{
	uint64_t most = 0;

	if (p == NULL)
		return 0;
	if (p->kind == GC_MAXVERSIONS)
		return p->limit;
	for (size_t i = 0; i < p->nchild; i++) {
		uint64_t n = gc_policy_version_limit(p->child[i]);

		if (n > most)
			most = n;
	}
	return most;
}
