/*
 * test_names.c - row keys and qualifiers spelled as path components
 * (docs/design.md section 2, "Names"), checked against hand-written spellings
 * and against a model of the rules written here independently of names.c
 * (it decodes code points arithmetically rather than by byte ranges).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/names.h"

#define MAXRAW	128			/* longest raw string the model takes */
#define MAXENC	(3 * MAXRAW + 1)

/* Model ---------------------------------------------------------------- */

/*
 * The length of the UTF-8 sequence at p if it spells, in shortest form, a
 * code point that may appear literally (U+00A0..U+10FFFF, no surrogate);
 * else 0.
 */
static size_t
model_utf8_len(const uint8_t *p, size_t n)
{
	static const uint32_t min_cp[5] = { 0, 0, 0x80, 0x800, 0x10000 };
	size_t len, i;
	uint32_t cp;

	if ((p[0] & 0xe0) == 0xc0) {
		len = 2;
		cp = p[0] & 0x1f;
	} else if ((p[0] & 0xf0) == 0xe0) {
		len = 3;
		cp = p[0] & 0x0f;
	} else if ((p[0] & 0xf8) == 0xf0) {
		len = 4;
		cp = p[0] & 0x07;
	} else
		return 0;
	if (n < len)
		return 0;
	for (i = 1; i < len; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3f);
	}
	if (cp < min_cp[len] || cp > 0x10ffff)
		return 0;			/* overlong, or too large */
	if (cp >= 0xd800 && cp <= 0xdfff)
		return 0;			/* surrogate */
	if (cp < 0xa0)
		return 0;			/* C1 control */
	return len;
}

static bool
model_plain_ascii(uint8_t c)
{
	return c >= 0x20 && c <= 0x7e && c != '/' && c != '%' && c != '@';
}

/* The canonical spelling of p[0..n) into enc (MAXENC bytes); its length. */
static size_t
model_encode(const uint8_t *p, size_t n, char *enc)
{
	size_t i = 0, k, m = 0;

	if (n > MAXRAW)
		tap_bail("model_encode: raw string too long");
	if (n == 0) {
		enc[0] = '%';
		return 1;
	}
	while (i < n) {
		if (model_plain_ascii(p[i]) && !(i == 0 && p[i] == '.')) {
			enc[m++] = (char)p[i++];
		} else if (p[i] >= 0x80 && (k = model_utf8_len(p + i, n - i))) {
			memcpy(enc + m, p + i, k);
			m += k;
			i += k;
		} else {
			snprintf(enc + m, 4, "%%%02X", p[i]);
			m += 3;
			i++;
		}
	}
	return m;
}

static int
model_hex(char c)
{
	const char *d = "0123456789abcdef", *u = "0123456789ABCDEF";
	const char *f;

	if (c == '\0')
		return -1;
	if ((f = strchr(d, c)) != NULL)
		return (int)(f - d);
	if ((f = strchr(u, c)) != NULL)
		return (int)(f - u);
	return -1;
}

/*
 * Decode name[0..n) into raw (n bytes) the way the contract says; false if
 * it is not a valid spelling.
 */
static bool
model_decode(const char *name, size_t n, uint8_t *raw, size_t *rawn)
{
	const uint8_t *p = (const uint8_t *)name;
	size_t i = 0, k, m = 0;

	if (n == 1 && name[0] == '%') {
		*rawn = 0;
		return true;
	}
	if (n == 0)
		return false;
	while (i < n) {
		if (p[i] == '%') {
			if (i + 2 >= n || model_hex(name[i + 1]) < 0 ||
			    model_hex(name[i + 2]) < 0)
				return false;
			raw[m++] = (uint8_t)(model_hex(name[i + 1]) * 16 +
			    model_hex(name[i + 2]));
			i += 3;
		} else if (model_plain_ascii(p[i])) {
			if (i == 0 && p[i] == '.')
				return false;
			raw[m++] = p[i++];
		} else if (p[i] >= 0x80 && (k = model_utf8_len(p + i, n - i))) {
			memcpy(raw + m, p + i, k);
			m += k;
			i += k;
		} else
			return false;
	}
	*rawn = m;
	return true;
}

/* Helpers -------------------------------------------------------------- */

/* Render bytes with C escapes into dst (cap bytes), for diag(). */
static const char *
show(const void *v, size_t n, char *dst, size_t cap)
{
	const uint8_t *p = v;
	size_t m = 0, i;

	for (i = 0; i < n && m + 5 < cap; i++) {
		if (p[i] >= 0x20 && p[i] < 0x7f && p[i] != '\\')
			dst[m++] = (char)p[i];
		else
			m += (size_t)snprintf(dst + m, cap - m, "\\x%02x", p[i]);
	}
	if (i < n && m + 4 < cap)
		m += (size_t)snprintf(dst + m, cap - m, "...");
	dst[m] = '\0';
	return dst;
}

static bool
buf_is(const struct buf *b, const void *p, size_t n)
{
	return b->n == n && (n == 0 || memcmp(b->p, p, n) == 0);
}

/*
 * Encode p[0..n) into out (cleared first) from an exact-size heap copy, so
 * that valgrind catches a read past the end.
 */
static int
encode_copy(const void *p, size_t n, struct buf *out)
{
	uint8_t *c = NULL;
	int rc;

	if (n > 0) {
		if ((c = malloc(n)) == NULL)
			tap_bail("malloc");
		memcpy(c, p, n);
	}
	buf_clear(out);
	rc = names_encode(slice_make(c, n), out);
	free(c);
	return rc;
}

/* names_decode() from an exact-size heap copy, as encode_copy(). */
static int
decode_copy(const void *name, size_t n, struct buf *out)
{
	char *c;
	int rc;

	if ((c = malloc(n ? n : 1)) == NULL)
		tap_bail("malloc");
	memcpy(c, name, n);
	rc = names_decode(c, n, out);
	free(c);
	return rc;
}

/* Lower-case the hex digits of every %XX in enc[0..n). */
static void
lower_hex(char *enc, size_t n)
{
	size_t i;

	for (i = 0; i + 2 < n; i++)
		if (enc[i] == '%') {
			if (enc[i + 1] >= 'A' && enc[i + 1] <= 'F')
				enc[i + 1] += 'a' - 'A';
			if (enc[i + 2] >= 'A' && enc[i + 2] <= 'F')
				enc[i + 2] += 'a' - 'A';
			i += 2;
		}
}

/*
 * The listing invariants: not empty, never '/', '@' or a control byte
 * (C0, DEL, or a C1 control in UTF-8), never a leading '.', and every '%'
 * starts %XX in upper case unless the name is "%" alone.
 */
static bool
listing_safe(const uint8_t *y, size_t n)
{
	size_t i;

	if (n == 0 || y[0] == '.')
		return false;
	if (n == 1 && y[0] == '%')
		return true;
	for (i = 0; i < n; i++) {
		if (y[i] == '/' || y[i] == '@' || y[i] < 0x20 || y[i] == 0x7f)
			return false;
		if (y[i] == 0xc2 && i + 1 < n && y[i + 1] >= 0x80 &&
		    y[i + 1] <= 0x9f)
			return false;
		if (y[i] == '%') {
			if (i + 2 >= n || y[i + 1] == 0 || y[i + 2] == 0 ||
			    !strchr("0123456789ABCDEF", y[i + 1]) ||
			    !strchr("0123456789ABCDEF", y[i + 2]))
				return false;
			i += 2;
		}
	}
	return true;
}

/*
 * Check raw against the spelling the model gives it: encoding matches,
 * the spelling decodes back (also with lower-case hex), and re-encodes to
 * itself.  Prints the first problem for the caller's count; 0 when all hold.
 */
static int
check_string(const uint8_t *raw, size_t n, struct buf *enc, struct buf *dec,
    bool verbose)
{
	char want[MAXENC], lower[MAXENC], s1[400], s2[400], s3[400];
	size_t wn;
	int rc;

	wn = model_encode(raw, n, want);
	buf_clear(enc);
	if ((rc = names_encode(slice_make(raw, n), enc)) != 0 ||
	    !buf_is(enc, want, wn)) {
		if (verbose)
			diag("encode \"%s\": rc %d, got \"%s\", want \"%s\"",
			    show(raw, n, s1, sizeof(s1)), rc,
			    show(enc->p, enc->n, s2, sizeof(s2)),
			    show(want, wn, s3, sizeof(s3)));
		return 1;
	}
	if (!listing_safe(enc->p, enc->n)) {
		if (verbose)
			diag("encode \"%s\" gave unsafe \"%s\"",
			    show(raw, n, s1, sizeof(s1)),
			    show(enc->p, enc->n, s2, sizeof(s2)));
		return 1;
	}
	if ((rc = names_decode(want, wn, dec)) != 0 || !buf_is(dec, raw, n)) {
		if (verbose)
			diag("decode \"%s\": rc %d, got \"%s\"",
			    show(want, wn, s1, sizeof(s1)), rc,
			    show(dec->p, dec->n, s2, sizeof(s2)));
		return 1;
	}
	buf_clear(enc);
	if ((rc = names_encode(buf_slice(dec), enc)) != 0 ||
	    !buf_is(enc, want, wn)) {
		if (verbose)
			diag("re-encode of \"%s\" is not itself",
			    show(want, wn, s1, sizeof(s1)));
		return 1;
	}
	memcpy(lower, want, wn);
	lower_hex(lower, wn);
	if ((rc = names_decode(lower, wn, dec)) != 0 || !buf_is(dec, raw, n)) {
		if (verbose)
			diag("decode lower-case \"%s\": rc %d",
			    show(lower, wn, s1, sizeof(s1)), rc);
		return 1;
	}
	return 0;
}

/* Tests ---------------------------------------------------------------- */

/*
 * Every byte value alone: its spelling, worked out here from the rule
 * itself, encodes and decodes; the byte as a literal one-byte name decodes
 * only when it stands for itself.
 */
static void
test_every_byte(void)
{
	struct buf enc, dec;
	char want[4], lower[4];
	size_t wn;
	int b, rc, rc2;

	buf_init(&enc);
	buf_init(&dec);
	for (b = 0; b < 256; b++) {
		uint8_t c = (uint8_t)b;

		if (c == '.') {
			strcpy(want, "%2E");
		} else if (c >= 0x20 && c <= 0x7e && c != '/' && c != '%' &&
		    c != '@') {
			want[0] = (char)c;
			want[1] = '\0';
		} else
			snprintf(want, sizeof(want), "%%%02X", c);
		wn = strlen(want);

		rc = encode_copy(&c, 1, &enc);
		ok(rc == 0 && buf_is(&enc, want, wn),
		    "byte 0x%02X encodes as \"%s\"", b, want);

		memcpy(lower, want, wn + 1);
		lower_hex(lower, wn);
		buf_set(&dec, "junk", 4);
		rc = decode_copy(want, wn, &dec);
		rc2 = rc == 0 && buf_is(&dec, &c, 1) ?
		    decode_copy(lower, wn, &dec) : -1;
		ok(rc == 0 && rc2 == 0 && buf_is(&dec, &c, 1),
		    "\"%s\" and \"%s\" decode to byte 0x%02X", want, lower, b);

		buf_set(&dec, "junk", 4);
		rc = decode_copy(&c, 1, &dec);
		if (c == '%')
			ok(rc == 0 && dec.n == 0,
			    "literal \"%%\" alone decodes to the empty string");
		else if (wn == 1)
			ok(rc == 0 && buf_is(&dec, &c, 1),
			    "literal byte 0x%02X decodes to itself", b);
		else
			ok(rc == -EINVAL && buf_is(&dec, "junk", 4),
			    "literal byte 0x%02X alone is EINVAL", b);
	}
	buf_release(&enc);
	buf_release(&dec);
}

struct enc_case {
	const char *raw;
	size_t rawn;
	const char *enc;
	const char *why;
};
#define EC(r, e, w) { r, sizeof(r) - 1, e, w }

static const struct enc_case enc_cases[] = {
	EC("", "%", "the empty string is % alone"),
	EC(".", "%2E", "a single dot is escaped"),
	EC("..", "%2E.", "dot-dot keeps only its leading dot escaped"),
	EC(".x", "%2Ex", "a dot-file name is escaped"),
	EC("...", "%2E..", "only the first of three dots is escaped"),
	EC("a.b", "a.b", "an inner dot stands for itself"),
	EC("x.", "x.", "a trailing dot stands for itself"),
	EC("/", "%2F", "a slash is escaped"),
	EC("%", "%25", "a percent is escaped"),
	EC("@", "%40", "an at-sign is escaped"),
	EC("@1650000000000000", "%401650000000000000",
	    "a key that looks like @TS is escaped"),
	EC("latest", "latest", "a control-like word is spelled as is"),
	EC("a b~", "a b~", "space and tilde stand for themselves"),
	EC("%2E", "%252E", "an escape-looking key is escaped again"),
	EC("\x00", "%00", "NUL is escaped"),
	EC("a\x00" "b", "a%00b", "an inner NUL is escaped"),
	EC("\x1f\x7f", "%1F%7F", "0x1F and DEL are escaped"),
	EC("\t\n\r", "%09%0A%0D", "whitespace controls are escaped"),
	EC("\xc3\xa9", "\xc3\xa9", "U+00E9 (2 bytes) stands for itself"),
	EC("\xe2\x82\xac", "\xe2\x82\xac", "U+20AC (3 bytes) stands for itself"),
	EC("\xf0\x9f\x98\x80", "\xf0\x9f\x98\x80",
	    "U+1F600 (4 bytes) stands for itself"),
	EC(".\xc3\xa9", "%2E\xc3\xa9", "a dot before UTF-8 is escaped"),
	EC("caf\xc3\xa9/\xe2\x82\xac", "caf\xc3\xa9%2F\xe2\x82\xac",
	    "UTF-8 around a slash"),
	EC("\xc2\xa0", "\xc2\xa0", "U+00A0, the first after C1, is literal"),
	EC("\xdf\xbf", "\xdf\xbf", "U+07FF, the last 2-byte, is literal"),
	EC("\xe0\xa0\x80", "\xe0\xa0\x80", "U+0800, the first 3-byte, is literal"),
	EC("\xed\x9f\xbf", "\xed\x9f\xbf", "U+D7FF, before surrogates, is literal"),
	EC("\xee\x80\x80", "\xee\x80\x80", "U+E000, after surrogates, is literal"),
	EC("\xef\xbf\xbf", "\xef\xbf\xbf", "U+FFFF is literal"),
	EC("\xf0\x90\x80\x80", "\xf0\x90\x80\x80", "U+10000 is literal"),
	EC("\xf4\x8f\xbf\xbf", "\xf4\x8f\xbf\xbf", "U+10FFFF is literal"),
	EC("\xc2\x80", "%C2%80", "C1 control U+0080 is escaped"),
	EC("\xc2\x85", "%C2%85", "C1 control U+0085 (NEL) is escaped"),
	EC("\xc2\x9f", "%C2%9F", "C1 control U+009F is escaped"),
	EC("\xc0\x80", "%C0%80", "overlong NUL is escaped"),
	EC("\xc1\xbf", "%C1%BF", "overlong 2-byte U+007F is escaped"),
	EC("\xe0\x9f\xbf", "%E0%9F%BF", "overlong 3-byte U+07FF is escaped"),
	EC("\xf0\x8f\xbf\xbf", "%F0%8F%BF%BF", "overlong 4-byte U+FFFF is escaped"),
	EC("\xed\xa0\x80", "%ED%A0%80", "surrogate U+D800 is escaped"),
	EC("\xed\xbf\xbf", "%ED%BF%BF", "surrogate U+DFFF is escaped"),
	EC("\xed\xa0\xbd\xed\xb8\x80", "%ED%A0%BD%ED%B8%80",
	    "a CESU-8 surrogate pair is escaped"),
	EC("\xf4\x90\x80\x80", "%F4%90%80%80", "U+110000 is escaped"),
	EC("\xf7\xbf\xbf\xbf", "%F7%BF%BF%BF", "U+1FFFFF is escaped"),
	EC("\xf5\x80\x80\x80", "%F5%80%80%80", "lead byte F5 is escaped"),
	EC("\xf8\x88\x80\x80\x80", "%F8%88%80%80%80", "a 5-byte form is escaped"),
	EC("\xfe\xff", "%FE%FF", "FE and FF are escaped"),
	EC("\x80", "%80", "a stray continuation byte is escaped"),
	EC("a\xbf" "b", "a%BFb", "an inner stray continuation is escaped"),
	EC("\xc3", "%C3", "a lone 2-byte lead is escaped"),
	EC("\xe2\x82", "%E2%82", "a truncated 3-byte sequence is escaped"),
	EC("\xf0\x9f\x98", "%F0%9F%98", "a truncated 4-byte sequence is escaped"),
	EC("\xe2\x82x", "%E2%82x", "a 3-byte sequence cut by ASCII"),
	EC("\xc3\xa9\xa9", "\xc3\xa9%A9", "a valid sequence then a stray byte"),
	EC("\xe2\xc3\xa9", "%E2\xc3\xa9", "a bad lead then a valid sequence"),
	EC("\xf0\x9f\x98\xc3\xa9", "%F0%9F%98\xc3\xa9",
	    "a truncated 4-byte sequence then a valid one"),
	EC("\xc3\xa9\xc3", "\xc3\xa9%C3", "a valid sequence then a lone lead"),
};
#define NENC_CASES (sizeof(enc_cases) / sizeof(enc_cases[0]))

/*
 * Hand-written spellings: encoding gives exactly them, they decode back,
 * and the model agrees with them (which is what lets later tests trust it).
 */
static void
test_encode_table(void)
{
	struct buf enc, dec;
	char want[MAXENC], s1[200], s2[200];
	size_t i, wn;
	int rc;

	buf_init(&enc);
	buf_init(&dec);
	for (i = 0; i < NENC_CASES; i++) {
		const struct enc_case *c = &enc_cases[i];
		size_t en = strlen(c->enc);

		rc = encode_copy(c->raw, c->rawn, &enc);
		if (!ok(rc == 0 && buf_is(&enc, c->enc, en), "encode: %s", c->why))
			diag("got \"%s\", want \"%s\"",
			    show(enc.p, enc.n, s1, sizeof(s1)),
			    show(c->enc, en, s2, sizeof(s2)));
		rc = decode_copy(c->enc, en, &dec);
		ok(rc == 0 && buf_is(&dec, c->raw, c->rawn),
		    "decode back: %s", c->why);
		wn = model_encode((const uint8_t *)c->raw, c->rawn, want);
		ok(wn == en && memcmp(want, c->enc, en) == 0,
		    "the model agrees: %s", c->why);
	}
	buf_release(&enc);
	buf_release(&dec);
}

/*
 * '/', '%', '@' and '.' in every position of strings of length 1 to 6, one
 * of them or all of them; the spelling is built by hand here.
 */
static void
test_specials_in_every_position(void)
{
	static const char specials[] = "/%@.";
	static const char *const esc[] = { "%2F", "%25", "%40", "%2E" };
	struct buf enc, dec;
	char raw[8], want[32];
	size_t s, len, pos, i, wn;
	int bad_one = 0, bad_all = 0, cases = 0;

	buf_init(&enc);
	buf_init(&dec);
	for (s = 0; s < 4; s++) {
		for (len = 1; len <= 6; len++) {
			for (pos = 0; pos < len; pos++) {
				wn = 0;
				for (i = 0; i < len; i++) {
					raw[i] = i == pos ? specials[s] :
					    (char)('a' + i);
					if (i != pos) {
						want[wn++] = raw[i];
					} else if (specials[s] == '.' && i > 0) {
						want[wn++] = '.';
					} else {
						memcpy(want + wn, esc[s], 3);
						wn += 3;
					}
				}
				cases++;
				if (encode_copy(raw, len, &enc) != 0 ||
				    !buf_is(&enc, want, wn) ||
				    decode_copy(want, wn, &dec) != 0 ||
				    !buf_is(&dec, raw, len)) {
					if (bad_one++ == 0)
						diag("'%c' at %zu of %zu",
						    specials[s], pos, len);
				}
			}
			/* The same character in every position at once. */
			wn = 0;
			for (i = 0; i < len; i++) {
				raw[i] = specials[s];
				if (specials[s] == '.' && i > 0)
					want[wn++] = '.';
				else {
					memcpy(want + wn, esc[s], 3);
					wn += 3;
				}
			}
			if (encode_copy(raw, len, &enc) != 0 ||
			    !buf_is(&enc, want, wn) ||
			    decode_copy(want, wn, &dec) != 0 ||
			    !buf_is(&dec, raw, len)) {
				if (bad_all++ == 0)
					diag("%zu times '%c'", len, specials[s]);
			}
		}
	}
	ok(bad_one == 0 && cases == 4 * 21,
	    "'/', '%%', '@', '.' in each of %d positions spell as expected",
	    cases);
	ok(bad_all == 0, "runs of '/', '%%', '@', '.' spell as expected");
	buf_release(&enc);
	buf_release(&dec);
}

/* The UTF-8 encoding of cp (any value below 2^21) into p; its length. */
static size_t
utf8_put(uint32_t cp, uint8_t *p)
{
	if (cp < 0x80) {
		p[0] = (uint8_t)cp;
		return 1;
	}
	if (cp < 0x800) {
		p[0] = (uint8_t)(0xc0 | cp >> 6);
		p[1] = (uint8_t)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		p[0] = (uint8_t)(0xe0 | cp >> 12);
		p[1] = (uint8_t)(0x80 | (cp >> 6 & 0x3f));
		p[2] = (uint8_t)(0x80 | (cp & 0x3f));
		return 3;
	}
	p[0] = (uint8_t)(0xf0 | cp >> 18);
	p[1] = (uint8_t)(0x80 | (cp >> 12 & 0x3f));
	p[2] = (uint8_t)(0x80 | (cp >> 6 & 0x3f));
	p[3] = (uint8_t)(0x80 | (cp & 0x3f));
	return 4;
}

/* The 4-byte forms of cp (below 2^21), also when overlong. */
static void
utf8_put4(uint32_t cp, uint8_t *p)
{
	p[0] = (uint8_t)(0xf0 | cp >> 18);
	p[1] = (uint8_t)(0x80 | (cp >> 12 & 0x3f));
	p[2] = (uint8_t)(0x80 | (cp >> 6 & 0x3f));
	p[3] = (uint8_t)(0x80 | (cp & 0x3f));
}

/* True if enc is each of the n bytes of p as %XX, upper case. */
static bool
all_escaped(const struct buf *enc, const uint8_t *p, size_t n)
{
	char want[16];
	size_t i;

	for (i = 0; i < n; i++)
		snprintf(want + 3 * i, 4, "%%%02X", p[i]);
	return buf_is(enc, want, 3 * n);
}

/*
 * Code points by range: every one from U+00A0 to U+FFFF (minus the
 * surrogates) and a stride through the supplementary planes stands for
 * itself; every C1 control, surrogate, overlong form of a code point below
 * U+0800, and 4-byte form above U+10FFFF is escaped byte by byte.
 */
static void
test_code_points(void)
{
	struct buf enc, dec;
	uint8_t p[4];
	uint32_t cp;
	size_t n;
	int bad[7] = { 0 }, cnt[7] = { 0 };

	buf_init(&enc);
	buf_init(&dec);
	for (cp = 0xa0; cp <= 0x10ffff; cp++) {
		int k;

		if (cp >= 0xd800 && cp <= 0xdfff)
			continue;
		if (cp >= 0x10000 && (cp & 0xffff) > 0x40 &&
		    (cp & 0xffff) < 0xffc0 && cp % 61 != 0)
			continue;	/* the supplementary planes sampled */
		n = utf8_put(cp, p);
		k = (int)n - 2;
		cnt[k]++;
		buf_clear(&enc);
		if (names_encode(slice_make(p, n), &enc) != 0 ||
		    !buf_is(&enc, p, n) || names_decode((char *)p, n, &dec) != 0 ||
		    !buf_is(&dec, p, n)) {
			if (bad[k]++ == 0)
				diag("U+%04X not literal", cp);
		}
	}
	ok(bad[0] == 0 && cnt[0] == 0x800 - 0xa0,
	    "all %d 2-byte code points from U+00A0 stand for themselves", cnt[0]);
	ok(bad[1] == 0 && cnt[1] == 0x10000 - 0x800 - 0x800,
	    "all %d 3-byte non-surrogates stand for themselves", cnt[1]);
	ok(bad[2] == 0 && cnt[2] > 15000,
	    "%d sampled 4-byte code points to U+10FFFF stand for themselves",
	    cnt[2]);

	for (cp = 0x80; cp <= 0x9f; cp++) {
		n = utf8_put(cp, p);
		buf_clear(&enc);
		cnt[3]++;
		if (names_encode(slice_make(p, n), &enc) != 0 ||
		    !all_escaped(&enc, p, n) ||
		    names_decode((char *)p, n, &dec) != -EINVAL)
			if (bad[3]++ == 0)
				diag("C1 U+%04X", cp);
	}
	ok(bad[3] == 0 && cnt[3] == 32,
	    "the 32 C1 controls are escaped, and refused as literals");

	for (cp = 0xd800; cp <= 0xdfff; cp++) {
		n = utf8_put(cp, p);
		buf_clear(&enc);
		cnt[4]++;
		if (names_encode(slice_make(p, n), &enc) != 0 ||
		    !all_escaped(&enc, p, n) ||
		    names_decode((char *)p, n, &dec) != -EINVAL)
			if (bad[4]++ == 0)
				diag("surrogate U+%04X", cp);
	}
	ok(bad[4] == 0 && cnt[4] == 2048,
	    "the 2048 surrogates are escaped, and refused as literals");

	for (cp = 0; cp < 0x10000; cp++) {
		uint8_t o[4];

		/* 2-byte overlongs below U+0080, 3-byte below U+0800. */
		if (cp < 0x80) {
			o[0] = (uint8_t)(0xc0 | cp >> 6);
			o[1] = (uint8_t)(0x80 | (cp & 0x3f));
			buf_clear(&enc);
			cnt[5]++;
			if (names_encode(slice_make(o, 2), &enc) != 0 ||
			    !all_escaped(&enc, o, 2) ||
			    names_decode((char *)o, 2, &dec) != -EINVAL)
				if (bad[5]++ == 0)
					diag("2-byte overlong U+%04X", cp);
		}
		if (cp < 0x800) {
			o[0] = 0xe0;
			o[1] = (uint8_t)(0x80 | (cp >> 6 & 0x3f));
			o[2] = (uint8_t)(0x80 | (cp & 0x3f));
			buf_clear(&enc);
			cnt[5]++;
			if (names_encode(slice_make(o, 3), &enc) != 0 ||
			    !all_escaped(&enc, o, 3) ||
			    names_decode((char *)o, 3, &dec) != -EINVAL)
				if (bad[5]++ == 0)
					diag("3-byte overlong U+%04X", cp);
		}
		utf8_put4(cp, o);
		buf_clear(&enc);
		cnt[5]++;
		if (names_encode(slice_make(o, 4), &enc) != 0 ||
		    !all_escaped(&enc, o, 4) ||
		    names_decode((char *)o, 4, &dec) != -EINVAL)
			if (bad[5]++ == 0)
				diag("4-byte overlong U+%04X", cp);
	}
	ok(bad[5] == 0 && cnt[5] == 0x80 + 0x800 + 0x10000,
	    "every overlong 2-, 3- and 4-byte form is escaped and refused");

	for (cp = 0x110000; cp < 0x200000; cp += 0x3f) {
		utf8_put4(cp, p);
		buf_clear(&enc);
		cnt[6]++;
		if (names_encode(slice_make(p, 4), &enc) != 0 ||
		    !all_escaped(&enc, p, 4) ||
		    names_decode((char *)p, 4, &dec) != -EINVAL)
			if (bad[6]++ == 0)
				diag("beyond U+10FFFF: U+%06X", cp);
	}
	ok(bad[6] == 0 && cnt[6] > 10000,
	    "%d 4-byte forms above U+10FFFF are escaped and refused", cnt[6]);
	buf_release(&enc);
	buf_release(&dec);
}

/*
 * Exhaustively, every 2-byte string; then every lead byte from 0xC0 with
 * every second byte and boundary third (and fourth) bytes, against the model.
 */
static void
test_short_strings_exhaustive(void)
{
	static const uint8_t tails[] = { '.', 0x7f, 0x80, 0xbf, 0xc0 };
	static const uint8_t tails4[] = { 0x7f, 0x80, 0xbf, 0xc0 };
	struct buf enc, dec;
	uint8_t p[4];
	unsigned a, b, c, d;
	int bad = 0, n2 = 0, n3 = 0, n4 = 0;

	buf_init(&enc);
	buf_init(&dec);
	for (a = 0; a < 256; a++)
		for (b = 0; b < 256; b++) {
			p[0] = (uint8_t)a;
			p[1] = (uint8_t)b;
			n2++;
			bad += check_string(p, 2, &enc, &dec, bad == 0);
		}
	ok(bad == 0 && n2 == 65536, "all 65536 two-byte strings match the model");

	bad = 0;
	for (a = 0xc0; a < 256; a++)
		for (b = 0; b < 256; b++)
			for (c = 0; c < sizeof(tails); c++) {
				p[0] = (uint8_t)a;
				p[1] = (uint8_t)b;
				p[2] = tails[c];
				n3++;
				bad += check_string(p, 3, &enc, &dec, bad == 0);
			}
	ok(bad == 0, "%d three-byte strings with a high lead match the model",
	    n3);

	bad = 0;
	for (a = 0xe0; a < 256; a++)
		for (b = 0x70; b < 0xd0; b++)
			for (c = 0; c < sizeof(tails4); c++)
				for (d = 0; d < sizeof(tails4); d++) {
					p[0] = (uint8_t)a;
					p[1] = (uint8_t)b;
					p[2] = tails4[c];
					p[3] = tails4[d];
					n4++;
					bad += check_string(p, 4, &enc, &dec,
					    bad == 0);
				}
	ok(bad == 0, "%d four-byte strings with a 3/4-byte lead match the model",
	    n4);
	buf_release(&enc);
	buf_release(&dec);
}

struct dec_case {
	const char *name;
	size_t n;
	const char *raw;
	size_t rawn;
	const char *why;
};
#define DC(s, r, w) { s, sizeof(s) - 1, r, sizeof(r) - 1, w }

static const struct dec_case dec_ok[] = {
	DC("%", "", "% alone is the empty string"),
	DC("%2e", ".", "lower-case %2e is a dot"),
	DC("%2ex", ".x", "lower-case %2e before text"),
	DC("%2E%2e", "..", "dot-dot both escaped, mixed case"),
	DC("a%2E", "a.", "an inner escaped dot, though not canonical"),
	DC("%41", "A", "non-canonical %41 is A"),
	DC("%41%42c", "ABc", "non-canonical escapes run together"),
	DC("%2f", "/", "lower-case %2f is a slash"),
	DC("%aB", "\xab", "mixed-case hex digits"),
	DC("%c3%a9", "\xc3\xa9", "escaped UTF-8 bytes, lower case"),
	DC("%E2%82%AC", "\xe2\x82\xac", "escaped UTF-8 bytes, upper case"),
	DC("%00", "\x00", "an escaped NUL"),
	DC("%25", "%", "an escaped percent"),
	DC("%40", "@", "an escaped at-sign"),
	DC("%C2%85", "\xc2\x85", "an escaped C1 control"),
	DC("%ED%A0%80", "\xed\xa0\x80", "an escaped surrogate"),
};
#define NDEC_OK (sizeof(dec_ok) / sizeof(dec_ok[0]))

#define RC(s, w) { s, sizeof(s) - 1, NULL, 0, w }
static const struct dec_case dec_bad[] = {
	RC("", "the empty name"),
	RC("%4", "% with one hex digit"),
	RC("a%4", "% with one hex digit at the end"),
	RC("a%", "% at the end of a longer name"),
	RC("%a", "% with one lower-case digit"),
	RC("%G0", "% with a non-hex first digit"),
	RC("%0G", "% with a non-hex second digit"),
	RC("%g0", "% with lower-case g"),
	RC("% 0", "% with a space"),
	RC("%%", "%%"),
	RC("%%41", "%% before hex"),
	RC("%-1", "% with a sign"),
	RC("/", "a literal slash"),
	RC("a/b", "an inner literal slash"),
	RC("ab/", "a trailing literal slash"),
	RC("@", "a literal at-sign"),
	RC("@1650000000000000", "a literal leading at-sign"),
	RC("a@b", "an inner literal at-sign"),
	RC(".", "a literal dot"),
	RC("..", "a literal dot-dot"),
	RC(".x", "a literal leading dot"),
	RC(".%41", "a literal leading dot before an escape"),
	RC("\x00", "a literal NUL"),
	RC("a\x00", "an inner literal NUL"),
	RC("\x01", "a literal control byte"),
	RC("a\nb", "a literal newline"),
	RC("\x1f", "literal 0x1F"),
	RC("\x7f", "literal DEL"),
	RC("\x80", "a literal stray continuation byte"),
	RC("a\xbf", "an inner literal stray continuation byte"),
	RC("\xc3", "a literal lone lead byte"),
	RC("\xc3x", "a literal lead byte before ASCII"),
	RC("\xc3%A9", "a sequence split between literal and escape"),
	RC("%C3\xa9", "an escaped lead does not make a literal continuation "
	    "valid"),
	RC("\xe2\x82", "a literal truncated 3-byte sequence"),
	RC("\xf0\x9f\x98", "a literal truncated 4-byte sequence"),
	RC("\xc0\x80", "a literal overlong NUL"),
	RC("\xc1\xbf", "a literal overlong 2-byte"),
	RC("\xe0\x80\xae", "a literal overlong dot"),
	RC("\xed\xa0\x80", "a literal surrogate"),
	RC("\xf4\x90\x80\x80", "literal U+110000"),
	RC("\xf5\x80\x80\x80", "a literal F5 lead"),
	RC("\xff", "literal 0xFF"),
	RC("\xfe", "literal 0xFE"),
	RC("\xc2\x80", "a literal C1 control U+0080"),
	RC("\xc2\x9f", "a literal C1 control U+009F"),
	RC("\xc3\xa9\xa9", "a literal valid sequence then a stray byte"),
};
#define NDEC_BAD (sizeof(dec_bad) / sizeof(dec_bad[0]))

/*
 * Decoding accepts what the contract allows (non-canonical included) and
 * refuses the rest with -EINVAL, leaving the output buffer as it was.
 */
static void
test_decode_table(void)
{
	struct buf dec;
	uint8_t raw[MAXENC];
	size_t i, rawn;
	char s1[200];
	int rc;

	buf_init(&dec);
	for (i = 0; i < NDEC_OK; i++) {
		const struct dec_case *c = &dec_ok[i];

		buf_set(&dec, "previous", 8);
		rc = decode_copy(c->name, c->n, &dec);
		if (!ok(rc == 0 && buf_is(&dec, c->raw, c->rawn),
		    "decode accepts: %s", c->why))
			diag("rc %d, got \"%s\"", rc,
			    show(dec.p, dec.n, s1, sizeof(s1)));
		ok(model_decode(c->name, c->n, raw, &rawn) && rawn == c->rawn &&
		    memcmp(raw, c->raw, rawn) == 0,
		    "the model accepts: %s", c->why);
	}
	for (i = 0; i < NDEC_BAD; i++) {
		const struct dec_case *c = &dec_bad[i];

		buf_set(&dec, "previous", 8);
		rc = decode_copy(c->name, c->n, &dec);
		if (!ok(rc == -EINVAL && buf_is(&dec, "previous", 8),
		    "decode refuses, out unchanged: %s", c->why))
			diag("rc %d", rc);
		ok(!model_decode(c->name, c->n, raw, &rawn),
		    "the model refuses: %s", c->why);
	}
	buf_release(&dec);
}

/* The name is n bytes, not a C string: nothing past n is read or used. */
static void
test_decode_length(void)
{
	struct buf dec;
	int rc;

	buf_init(&dec);
	rc = decode_copy("ab", 1, &dec);
	ok(rc == 0 && buf_is(&dec, "a", 1), "decode stops at n (\"ab\", 1)");
	rc = decode_copy("%41", 2, &dec);
	ok(rc == -EINVAL, "an escape cut by n is refused (\"%%41\", 2)");
	rc = decode_copy("%41", 1, &dec);
	ok(rc == 0 && dec.n == 0, "\"%%41\" cut to 1 byte is \"%%\", empty");
	rc = decode_copy("a\xc3\xa9", 2, &dec);
	ok(rc == -EINVAL, "a UTF-8 sequence cut by n is refused");
	rc = decode_copy("%41/", 3, &dec);
	ok(rc == 0 && buf_is(&dec, "A", 1), "a slash past n is not seen");
	rc = decode_copy("x\0y", 3, &dec);
	ok(rc == -EINVAL, "a NUL inside n is refused, not an end");
	buf_release(&dec);
}

/* names_encode() appends; names_decode() replaces. */
static void
test_append_and_replace(void)
{
	struct buf b;
	int rc;

	buf_init(&b);
	buf_set(&b, "row=", 4);
	rc = names_encode(slice_make("/a", 2), &b);
	ok(rc == 0 && buf_is(&b, "row=%2Fa", 8), "encode appends to out");
	rc = names_encode(slice_make(NULL, 0), &b);
	ok(rc == 0 && buf_is(&b, "row=%2Fa%", 9),
	    "encode of the empty string appends %%");
	rc = names_encode(slice_make(".", 1), &b);
	ok(rc == 0 && buf_is(&b, "row=%2Fa%%2E", 12),
	    "the leading-dot rule applies to raw, not to out");
	rc = names_decode("xy", 2, &b);
	ok(rc == 0 && buf_is(&b, "xy", 2), "decode replaces out's content");
	rc = names_decode("%", 1, &b);
	ok(rc == 0 && b.n == 0, "decode of %% empties out");
	buf_release(&b);
}

/* An allocation failure is -ENOMEM and leaves out as it was. */
static void
test_enomem(void)
{
	struct buf b;
	char big[200];
	int rc;

	memset(big, '/', sizeof(big));
	buf_init(&b);
	bt_alloc_fail_after(1);
	rc = names_encode(slice_make("abc", 3), &b);
	ok(rc == -ENOMEM && b.n == 0 && b.p == NULL,
	    "encode into an empty buffer: -ENOMEM, nothing allocated");
	rc = names_encode(slice_make(NULL, 0), &b);
	ok(rc == -ENOMEM && b.n == 0, "encode of the empty string: -ENOMEM");
	rc = names_decode("abc", 3, &b);
	ok(rc == -ENOMEM && b.n == 0 && b.p == NULL,
	    "decode into an empty buffer: -ENOMEM, nothing allocated");
	bt_alloc_fail_after(0);

	buf_set(&b, "ab", 2);
	bt_alloc_fail_after(1);
	rc = names_encode(slice_make(big, sizeof(big)), &b);
	ok(rc == -ENOMEM && buf_is(&b, "ab", 2),
	    "encode that must grow out: -ENOMEM, out unchanged");
	memset(big, 'x', sizeof(big));
	rc = names_decode(big, sizeof(big), &b);
	ok(rc == -ENOMEM && buf_is(&b, "ab", 2),
	    "decode that must grow out: -ENOMEM, out unchanged");
	rc = names_decode("%", 1, &b);
	ok(rc == 0 && b.n == 0, "decode of %% needs no allocation");
	bt_alloc_fail_after(0);

	rc = names_decode(big, sizeof(big), &b);
	ok(rc == 0 && buf_is(&b, big, sizeof(big)),
	    "with the fault cleared the same decode works");
	buf_release(&b);
}

/* A byte for random strings, biased to the ones the rules single out. */
static size_t
random_piece(uint64_t *rng, uint8_t *p)
{
	static const uint8_t hot[] = { '.', '/', '%', '@', 0x00, 0x1f, 0x20,
	    0x7e, 0x7f, 0x80, 0x9f, 0xa0, 0xbf, 0xc0, 0xc1, 0xc2, 0xc3, 0xdf,
	    0xe0, 0xe2, 0xed, 0xef, 0xf0, 0xf4, 0xf5, 0xf8, 0xff, 'a', 'Z',
	    '0', 'E', '2', '\\' };
	static const char *const seqs[] = { "\xc3\xa9", "\xe2\x82\xac",
	    "\xf0\x9f\x98\x80", "\xc2\xa0", "\xc2\x9f", "\xf4\x8f\xbf\xbf",
	    "\xed\x9f\xbf", "\xed\xa0\x80", "\xef\xbf\xbf", "\xe0\xa0\x80",
	    "\xf0\x90\x80\x80", "\xc0\xae", "%2E", "%41" };
	uint64_t r = tap_rand(rng);

	switch (r % 4) {
	case 0:
		p[0] = (uint8_t)(r >> 8);
		return 1;
	case 1:
	case 2:
		p[0] = hot[(r >> 8) % sizeof(hot)];
		return 1;
	default: {
		const char *s = seqs[(r >> 8) % (sizeof(seqs) / sizeof(seqs[0]))];
		size_t n = strlen(s);

		memcpy(p, s, n);
		return n;
	}
	}
}

/*
 * 100,000 random byte strings (length 0 to 40): the spelling matches the
 * model, keeps the listing invariants, decodes back (also in lower case),
 * and re-encodes to itself.  Then random names: decode accepts exactly
 * what the model accepts, with the same bytes.
 */
static void
test_random(uint64_t *rng)
{
	struct buf enc, dec;
	uint8_t raw[MAXRAW + 4], mraw[MAXENC];
	char name[MAXENC], s1[400];
	size_t n, want, mn;
	int bad = 0, bad_dec = 0, accepted = 0, rc;
	long iter;

	buf_init(&enc);
	buf_init(&dec);
	for (iter = 0; iter < 100000; iter++) {
		want = tap_rand(rng) % 41;
		for (n = 0; n < want;)
			n += random_piece(rng, raw + n);
		if (n > 40)
			n = 40;
		bad += check_string(raw, n, &enc, &dec, bad == 0);
	}
	ok(bad == 0, "100000 random strings: spelling, invariants, round trips");

	for (iter = 0; iter < 100000; iter++) {
		want = tap_rand(rng) % 21;
		for (n = 0; n < want;) {
			uint64_t r = tap_rand(rng);

			if (r % 5 == 0) {
				n += (size_t)snprintf(name + n, 4, "%%%02x",
				    (unsigned)(r >> 8) & 0xff);
			} else if (r % 40 == 1) {
				name[n++] = '%';
			} else
				n += random_piece(rng, (uint8_t *)name + n);
		}
		buf_set(&dec, "previous", 8);
		rc = names_decode(name, n, &dec);
		if (model_decode(name, n, mraw, &mn)) {
			accepted++;
			if (rc != 0 || !buf_is(&dec, mraw, mn)) {
				if (bad_dec++ == 0)
					diag("\"%s\" should decode: rc %d",
					    show(name, n, s1, sizeof(s1)), rc);
			}
		} else if (rc != -EINVAL || !buf_is(&dec, "previous", 8)) {
			if (bad_dec++ == 0)
				diag("\"%s\" should be refused: rc %d",
				    show(name, n, s1, sizeof(s1)), rc);
		}
		/* A name that decodes re-encodes canonically, per the model. */
		if (rc == 0) {
			char canon[MAXENC];
			size_t cn = model_encode(dec.p, dec.n, canon);

			buf_clear(&enc);
			if (names_encode(buf_slice(&dec), &enc) != 0 ||
			    !buf_is(&enc, canon, cn))
				if (bad_dec++ == 0)
					diag("\"%s\" re-encodes wrongly",
					    show(name, n, s1, sizeof(s1)));
		}
	}
	ok(bad_dec == 0, "100000 random names decode exactly as the model says");
	ok(accepted > 5000 && accepted < 95000,
	    "random names were a mix of valid (%d) and invalid", accepted);
	buf_release(&enc);
	buf_release(&dec);
}

/* The listed component of n copies of unit (raw bytes), into out. */
static void
component_of(const char *unit, size_t n, const char *tail, struct buf *raw,
    struct buf *out)
{
	buf_clear(raw);
	for (size_t i = 0; i < n; i++)
		(void)buf_append(raw, unit, strlen(unit));
	(void)buf_append(raw, tail, strlen(tail));
	buf_clear(out);
	if (names_component(buf_slice(raw), out) < 0)
		buf_clear(out);
}

/* Whether name is prefix_unit repeated k times, "%~" and 32 hex digits. */
static bool
short_form_is(const struct buf *name, const char *unit, size_t k)
{
	size_t u = strlen(unit), plen = u * k;

	if (name->n != plen + NAMES_SHORT_SUFFIX)
		return false;
	for (size_t i = 0; i < k; i++)
		if (memcmp(name->p + i * u, unit, u) != 0)
			return false;
	return memcmp(name->p + plen, "%~", 2) == 0;
}

/*
 * Short names (names.h): a spelling that fits is listed as it is; a longer
 * one is cut at a unit boundary to at most 221 bytes, then "%~" and the
 * first 128 bits of the SHA-256 of the raw bytes; the form is recognised,
 * its prefix decoded, and matched against the key it came from only.
 */
static void
test_short_names(void)
{
	struct buf raw, name, name2, out;
	char shape[300];

	buf_init(&raw);
	buf_init(&name);
	buf_init(&name2);
	buf_init(&out);
	component_of("a", 255, "", &raw, &name);
	ok(name.n == 255 && memchr(name.p, '%', name.n) == NULL,
	    "a 255-byte spelling is listed as it is");
	component_of("a", 256, "", &raw, &name);
	ok(short_form_is(&name, "a", 221) && memcmp(name.p + 223,
	    "02d7160d77e18c6447be80c2e355c7ed", 32) == 0,
	    "256 a's: 221 a's, %%~, SHA-256's first 128 bits (pinned)");
	is_int(names_short_prefix((const char *)name.p, name.n, &out), 1,
	    "the short form is recognised");
	ok(out.n == 221 && memcmp(out.p, raw.p, 221) == 0,
	    "its prefix decodes to the key's first 221 bytes");
	ok(names_component_is(buf_slice(&raw), (const char *)name.p, name.n,
	    &out) == 1, "component_is matches the key it came from");
	component_of("a", 257, "", &raw, &name2);
	ok(names_component_is(buf_slice(&raw), (const char *)name.p, name.n,
	    &out) == 0, "and not a longer key with the same prefix");
	ok(names_decode((const char *)name.p, name.n, &out) == -EINVAL,
	    "a short form is not a spelling: decode refuses it");
	component_of("\x01", 100, "", &raw, &name);
	ok(short_form_is(&name, "%01", 73), "%%XX units are never cut");
	component_of("\xc3\xa9", 200, "", &raw, &name);
	ok(short_form_is(&name, "\xc3\xa9", 110),
	    "UTF-8 sequences are never cut");
	component_of("b", 300, "1", &raw, &name);
	component_of("b", 300, "2", &raw, &name2);
	ok(short_form_is(&name, "b", 221) && short_form_is(&name2, "b", 221) &&
	    memcmp(name.p + 223, name2.p + 223, 32) != 0,
	    "keys sharing 300 bytes get different hashes");
	buf_clear(&raw);
	(void)buf_append(&raw, ".", 1);
	for (int i = 0; i < 300; i++)
		(void)buf_append(&raw, "b", 1);
	buf_clear(&name);
	(void)names_component(buf_slice(&raw), &name);
	ok(name.n == 221 + NAMES_SHORT_SUFFIX &&
	    memcmp(name.p, "%2Ebbb", 6) == 0,
	    "a leading dot stays %%2E in the prefix");

	memset(shape, 'a', sizeof(shape));
	memcpy(shape + 10, "%~", 2);
	memset(shape + 12, '0', 32);
	is_int(names_short_prefix(shape, 44, &out), 1,
	    "any decodable prefix has the shape");
	is_int(names_short_prefix(shape + 10, 34, &out), -EINVAL,
	    "no prefix: EINVAL");
	shape[12] = 'A';
	is_int(names_short_prefix(shape, 44, &out), 0,
	    "upper-case hash digits: not a short form");
	shape[12] = 'g';
	is_int(names_short_prefix(shape, 44, &out), 0,
	    "a non-hex hash: not a short form");
	shape[12] = '0';
	is_int(names_short_prefix(shape, 43, &out), 0,
	    "31 digits: not a short form");
	shape[3] = '/';
	is_int(names_short_prefix(shape, 44, &out), -EINVAL,
	    "an undecodable prefix: EINVAL");
	memset(shape, 'a', sizeof(shape));
	memcpy(shape + 222, "%~", 2);
	memset(shape + 224, '0', 32);
	is_int(names_short_prefix(shape, 256, &out), 0,
	    "over 255 bytes: not a short form");

	buf_release(&raw);
	buf_release(&name);
	buf_release(&name2);
	buf_release(&out);
}

/* names_decode_in_place(): the same rule, no buffer. */
static void
test_decode_in_place(void)
{
	char s1[] = "a%2fb", s2[] = "%", s3[] = "a/b";
	size_t n1 = 5, n2 = 1, n3 = 3;
	int rc;

	rc = names_decode_in_place(s1, &n1);
	ok(rc == 0 && n1 == 3 && memcmp(s1, "a/b", 3) == 0,
	    "decode in place");
	rc = names_decode_in_place(s2, &n2);
	ok(rc == 0 && n2 == 0, "decode in place: %% is empty");
	rc = names_decode_in_place(s3, &n3);
	ok(rc == -EINVAL && n3 == 3 && memcmp(s3, "a/b", 3) == 0,
	    "decode in place refuses, leaving the name as it was");
}

int
main(void)
{
	uint64_t rng = tap_seed();

	test_every_byte();
	test_encode_table();
	test_specials_in_every_position();
	test_code_points();
	test_short_strings_exhaustive();
	test_decode_table();
	test_decode_length();
	test_append_and_replace();
	test_enomem();
	test_random(&rng);
	test_short_names();
	test_decode_in_place();
	return tap_done();
}
