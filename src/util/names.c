/*
 * names.c - row keys and qualifiers spelled as path components, and back.
 *
 * Both directions share one rule, literal_len(): a run of bytes either
 * stands for itself or its first byte is written %XX.  The encoder escapes
 * exactly what literal_len() refuses, and the decoder accepts a literal
 * exactly where literal_len() would have kept it, so every canonical name
 * decodes and re-encodes to itself.
 *
 * The short form's hash is SHA-256 from libmd (libbsd's companion, already
 * a dependency): a standard function whose value never changes between
 * versions, and whose collisions nobody can make, so that no key can be
 * given the short name of another on purpose.
 */
#include <errno.h>
#include <sha2.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "util/names.h"

static const char hex_upper[] = "0123456789ABCDEF";

/*
 * The length (2 to 4) of the UTF-8 sequence at p if it may stand for
 * itself, else 0.  It must be the shortest form of a code point in
 * U+00A0..U+10FFFF other than a surrogate: the well-formed byte sequences
 * of Unicode Table 3-7, less C2 80..C2 9F (the C1 controls).  Only the
 * second byte has a range narrower than 80..BF.
 */
static size_t
utf8_len(const uint8_t *p, size_t n)
{
	uint8_t lo = 0x80, hi = 0xbf;
	size_t len, i;

	if (p[0] < 0xc2)
		return 0;	/* ASCII, continuation byte, or overlong C0/C1 */
	else if (p[0] <= 0xdf) {
		len = 2;
		if (p[0] == 0xc2)
			lo = 0xa0;
	} else if (p[0] <= 0xef) {
		len = 3;
		if (p[0] == 0xe0)
			lo = 0xa0;
		else if (p[0] == 0xed)
			hi = 0x9f;
	} else if (p[0] <= 0xf4) {
		len = 4;
		if (p[0] == 0xf0)
			lo = 0x90;
		else if (p[0] == 0xf4)
			hi = 0x8f;
	} else
		return 0;	/* F5..FF: beyond U+10FFFF or never valid */
	if (n < len || p[1] < lo || p[1] > hi)
		return 0;
	for (i = 2; i < len; i++)
		if ((p[i] & 0xc0) != 0x80)
			return 0;
	return len;
}

/*
 * How many of the n bytes at p (n >= 1) stand for themselves in a name:
 * 1 for a plain printable ASCII byte, 2 to 4 for an allowed UTF-8
 * sequence, or 0 when p[0] must be written %XX.  first says p starts the
 * name, where '.' is escaped.
 */
static size_t
literal_len(const uint8_t *p, size_t n, bool first)
{
	uint8_t c = p[0];

	if (c >= 0x80)
		return utf8_len(p, n);
	if (c < 0x20 || c == 0x7f || c == '/' || c == '%' || c == '@')
		return 0;
	if (c == '.' && first)
		return 0;
	return 1;
}

/* A byte that stands for itself anywhere but first: literal_len() == 1. */
static bool
plain_ascii(uint8_t c)
{
	return c >= 0x20 && c < 0x7f && c != '/' && c != '%' && c != '@';
}

#define BYTES_ONES 0x0101010101010101ull
#define BYTES_HIGH 0x8080808080808080ull

/* Whether a byte of w is below b (b <= 0x80), bytes of w below 0x80. */
static inline uint64_t
word_has_less(uint64_t w, uint8_t b)
{
	return (w - BYTES_ONES * b) & ~w & BYTES_HIGH;
}

/* Whether a byte of w is b, bytes of w below 0x80. */
static inline uint64_t
word_has(uint64_t w, uint8_t b)
{
	return word_has_less(w ^ (BYTES_ONES * b), 1);
}

/* How many of the first n bytes at p are plain_ascii(), eight at a time
 * while they are (readdir asks it of every row it lists). */
static size_t
plain_ascii_span(const uint8_t *p, size_t n)
{
	size_t i = 0;
	uint64_t w;

	for (; n - i >= 8; i += 8) {
		memcpy(&w, p + i, 8);
		if ((w & BYTES_HIGH) != 0 || word_has_less(w, 0x20) != 0 ||
		    word_has(w, 0x7f) != 0 || word_has(w, '/') != 0 ||
		    word_has(w, '%') != 0 || word_has(w, '@') != 0)
			break;
	}
	while (i < n && plain_ascii(p[i]))
		i++;
	return i;
}

int
names_hex_value(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/*
 * Measure first and reserve once, so that -ENOMEM leaves out untouched and
 * the copy loop cannot fail.  Most keys are plain printable ASCII, which
 * is copied as it is (readdir encodes every row it lists).
 */
int
names_encode(struct slice raw, struct buf *out)
{
	size_t i, k, len = 0;
	uint8_t *q;
	int rc;

	if (raw.n == 0)
		return buf_append(out, "%", 1);
	i = plain_ascii_span(raw.p, raw.n);
	if (i == raw.n && raw.p[0] != '.')
		return buf_append(out, raw.p, raw.n);
	if (raw.n > SIZE_MAX / 3)
		return -ENOMEM;
	for (i = 0; i < raw.n; i += k ? k : 1) {
		k = literal_len(raw.p + i, raw.n - i, i == 0);
		len += k ? k : 3;
	}
	if ((rc = buf_reserve(out, len)) < 0)
		return rc;
	q = out->p + out->n;
	for (i = 0; i < raw.n; i += k ? k : 1) {
		k = literal_len(raw.p + i, raw.n - i, i == 0);
		if (k > 0) {
			memcpy(q, raw.p + i, k);
			q += k;
		} else {
			*q++ = '%';
			*q++ = (uint8_t)hex_upper[raw.p[i] >> 4];
			*q++ = (uint8_t)hex_upper[raw.p[i] & 0xf];
		}
	}
	out->n += len;
	return 0;
}

/* Whether the n bytes at p are a valid spelling (names_decode()). */
static bool
spelling_valid(const uint8_t *p, size_t n)
{
	size_t i, k;

	if (n == 0)
		return false;
	for (i = 0; i < n; i += k) {
		if (p[i] == '%') {
			if (n == 1)
				return true;	/* the empty string */
			if (n - i < 3 || names_hex_value(p[i + 1]) < 0 ||
			    names_hex_value(p[i + 2]) < 0)
				return false;
			k = 3;
		} else if ((k = literal_len(p + i, n - i, i == 0)) == 0)
			return false;
	}
	return true;
}

/* Write the bytes that valid spelling p[0..n) stands for at q, which may
 * be p itself (they are never more), and return how many. */
static size_t
spelling_unescape(const uint8_t *p, size_t n, uint8_t *q)
{
	size_t i = 0, o = 0;

	if (n == 1 && p[0] == '%')
		return 0;
	while (i < n) {
		if (p[i] == '%') {
			q[o++] = (uint8_t)(names_hex_value(p[i + 1]) << 4 |
			    names_hex_value(p[i + 2]));
			i += 3;
		} else
			q[o++] = p[i++];
	}
	return o;
}

/*
 * Validate the whole name before touching out, so that any error leaves
 * out as it was.  A decoded name is never longer than its spelling.
 */
int
names_decode(const char *name, size_t n, struct buf *out)
{
	const uint8_t *p = (const uint8_t *)name;
	size_t old;
	int rc;

	if (!spelling_valid(p, n))
		return -EINVAL;
	old = out->n;
	out->n = 0;
	if ((rc = buf_reserve(out, n)) < 0) {
		out->n = old;
		return rc;
	}
	out->n = spelling_unescape(p, n, out->p);
	return 0;
}

int
names_decode_in_place(char *name, size_t *n)
{
	uint8_t *p = (uint8_t *)name;

	if (!spelling_valid(p, *n))
		return -EINVAL;
	*n = spelling_unescape(p, *n, p);
	return 0;
}

/* Append the short form's suffix for raw: the marker and the hash. */
static int
short_suffix_append(struct slice raw, struct buf *out)
{
	static const char hex_lower[] = "0123456789abcdef";
	uint8_t digest[SHA256_DIGEST_LENGTH];
	char suffix[NAMES_SHORT_SUFFIX];
	SHA2_CTX ctx;
	size_t i;

	SHA256Init(&ctx);
	SHA256Update(&ctx, raw.p, raw.n);
	SHA256Final(digest, &ctx);
	memcpy(suffix, NAMES_SHORT_MARK, 2);
	for (i = 0; i < NAMES_SHORT_HASH_DIGITS / 2; i++) {
		suffix[2 + 2 * i] = hex_lower[digest[i] >> 4];
		suffix[3 + 2 * i] = hex_lower[digest[i] & 0xf];
	}
	return buf_append(out, suffix, sizeof(suffix));
}

/*
 * Encode whole, and only when that is too long cut the spelling back to
 * the units that fit (the encoder's own walk, so no cut splits a %XX or a
 * UTF-8 sequence) and add the suffix.
 */
int
names_component(struct slice raw, struct buf *out)
{
	size_t start = out->n, i, k, unit, len = 0;
	int rc;

	if ((rc = names_encode(raw, out)) < 0)
		return rc;
	if (out->n - start <= NAMES_MAX_COMPONENT)
		return 0;
	for (i = 0; i < raw.n; i += k ? k : 1) {
		k = literal_len(raw.p + i, raw.n - i, i == 0);
		unit = k ? k : 3;
		if (len + unit > NAMES_SHORT_PREFIX_MAX)
			break;
		len += unit;
	}
	out->n = start + len;
	if ((rc = short_suffix_append(raw, out)) < 0)
		out->n = start;
	return rc;
}

int
names_short_prefix(const char *name, size_t n, struct buf *out)
{
	const char *mark;
	size_t i;
	int rc;

	if (n < NAMES_SHORT_SUFFIX || n > NAMES_MAX_COMPONENT)
		return 0;
	mark = name + n - NAMES_SHORT_SUFFIX;
	if (memcmp(mark, NAMES_SHORT_MARK, 2) != 0)
		return 0;
	for (i = 2; i < NAMES_SHORT_SUFFIX; i++)
		if (!((mark[i] >= '0' && mark[i] <= '9') ||
		    (mark[i] >= 'a' && mark[i] <= 'f')))
			return 0;
	if (mark == name)
		return -EINVAL;	/* no prefix: never listed */
	rc = names_decode(name, (size_t)(mark - name), out);
	return rc == -ENOMEM ? rc : rc < 0 ? -EINVAL : 1;
}

int
names_component_is(struct slice raw, const char *name, size_t n,
    struct buf *scratch)
{
	int rc;

	buf_clear(scratch);
	if ((rc = names_component(raw, scratch)) < 0)
		return rc;
	return scratch->n == n && memcmp(scratch->p, name, n) == 0;
}
