/* test_units.c - size and duration spellings (docs/design.md section 3). */
#include <errno.h>

#include "tap.h"
#include "util/error.h"
#include "util/units.h"

#define KIB	UINT64_C(1024)
#define MIB	(KIB * 1024)
#define GIB	(MIB * 1024)
#define SEC	UINT64_C(1000000)
#define MIN	(60 * SEC)
#define HOUR	(60 * MIN)
#define DAY	(24 * HOUR)

#define SENTINEL UINT64_C(0xdeadbeefcafef00d)

struct good {
	const char *text;
	uint64_t want;
};

struct bad {
	const char *text;
	int rc;
};

static const struct good good_sizes[] = {
	{ "256K", 256 * KIB },
	{ "64k", 64 * KIB },
	{ "1g", GIB },
	{ "1G", GIB },
	{ "1m", MIB },
	{ "3M", 3 * MIB },
	{ "4096", 4096 },
	{ "0", 0 },
	{ "0k", 0 },
	{ "1", 1 },
	{ "007", 7 },
	{ "1536", 1536 },
	{ "18446744073709551615", UINT64_MAX },
	{ "17179869183g", UINT64_C(17179869183) * GIB },
	{ "17592186044415m", UINT64_C(17592186044415) * MIB },
	{ "18014398509481983k", UINT64_C(18014398509481983) * KIB },
};

static const struct bad bad_sizes[] = {
	{ "", -EINVAL },
	{ "k", -EINVAL },
	{ "K", -EINVAL },
	{ "12x", -EINVAL },
	{ "-1", -EINVAL },
	{ "+1", -EINVAL },
	{ " 1", -EINVAL },
	{ "1 ", -EINVAL },
	{ "\t1", -EINVAL },
	{ "1 k", -EINVAL },
	{ "1kb", -EINVAL },
	{ "1KB", -EINVAL },
	{ "1kk", -EINVAL },
	{ "1k1", -EINVAL },
	{ "1.5k", -EINVAL },
	{ "0x10", -EINVAL },
	{ "1e3", -EINVAL },
	{ "1t", -EINVAL },
	{ "1s", -EINVAL },
	{ "1\n", -EINVAL },
	{ "999999999999999999999999999999x", -EINVAL },
	{ "99999999999g", -ERANGE },
	{ "17179869184g", -ERANGE },
	{ "17592186044416m", -ERANGE },
	{ "18014398509481984k", -ERANGE },
	{ "18446744073709551616", -ERANGE },
	{ "999999999999999999999999999999999999999999", -ERANGE },
};

static const struct good good_durations[] = {
	{ "30s", 30 * SEC },
	{ "15m", 15 * MIN },
	{ "12h", 12 * HOUR },
	{ "7d", 7 * DAY },
	{ "2s", 2 * SEC },
	{ "0s", 0 },
	{ "0d", 0 },
	{ "1S", SEC },
	{ "1M", MIN },
	{ "1H", HOUR },
	{ "1D", DAY },
	{ "90s", 90 * SEC },
	{ "0010s", 10 * SEC },
	{ "18446744073709s", UINT64_C(18446744073709) * SEC },
	{ "213503982d", UINT64_C(213503982) * DAY },
};

static const struct bad bad_durations[] = {
	{ "", -EINVAL },
	{ "7", -EINVAL },
	{ "0", -EINVAL },
	{ "s", -EINVAL },
	{ "d", -EINVAL },
	{ "1ms", -EINVAL },
	{ "1us", -EINVAL },
	{ "1w", -EINVAL },
	{ "1y", -EINVAL },
	{ "1k", -EINVAL },
	{ "-1s", -EINVAL },
	{ "+1s", -EINVAL },
	{ "1 s", -EINVAL },
	{ " 1s", -EINVAL },
	{ "1s ", -EINVAL },
	{ "1.5h", -EINVAL },
	{ "1d1h", -EINVAL },
	{ "1hh", -EINVAL },
	{ "1h30m", -EINVAL },
	{ "99999999999999999999999999999", -EINVAL },
	{ "18446744073710s", -ERANGE },
	{ "213503983d", -ERANGE },
	{ "5124095576031h", -ERANGE },
	{ "99999999999999999999999s", -ERANGE },
};

#define N(a)	(sizeof(a) / sizeof((a)[0]))

/* text with its control bytes as \xHH, so a TAP line stays one line. */
static const char *
show(char *dst, size_t size, const char *text)
{
	size_t n = 0;

	for (; *text != '\0' && n + 5 < size; text++) {
		unsigned char c = (unsigned char)*text;

		if (c >= 0x20 && c < 0x7f)
			dst[n++] = (char)c;
		else
			n += (size_t)snprintf(dst + n, size - n, "\\x%02X", c);
	}
	dst[n] = '\0';
	return dst;
}

static void
test_parse_size(void)
{
	char name[128];
	uint64_t v;
	size_t i;
	int rc;

	for (i = 0; i < N(good_sizes); i++) {
		v = SENTINEL;
		rc = parse_size(good_sizes[i].text, &v);
		is_int(rc, 0, "parse_size accepts '%s'", good_sizes[i].text);
		ok(v == good_sizes[i].want, "parse_size('%s') = %" PRIu64
		    " (got %" PRIu64 ")", good_sizes[i].text,
		    good_sizes[i].want, v);
	}
	for (i = 0; i < N(bad_sizes); i++) {
		const char *t = show(name, sizeof(name), bad_sizes[i].text);

		v = SENTINEL;
		bt_error_clear();
		rc = parse_size(bad_sizes[i].text, &v);
		is_int(rc, bad_sizes[i].rc, "parse_size rejects '%s' with %s",
		    t, bt_strerror(bad_sizes[i].rc));
		ok(v == SENTINEL, "parse_size('%s') leaves the output alone",
		    t);
		ok(strncmp(bt_error_detail(), "size '", 6) == 0,
		    "parse_size('%s') records a detail: %s", t,
		    bt_error_detail());
	}
}

static void
test_parse_duration(void)
{
	char name[128];
	uint64_t v;
	size_t i;
	int rc;

	for (i = 0; i < N(good_durations); i++) {
		v = SENTINEL;
		rc = parse_duration(good_durations[i].text, &v);
		is_int(rc, 0, "parse_duration accepts '%s'",
		    good_durations[i].text);
		ok(v == good_durations[i].want, "parse_duration('%s') = %"
		    PRIu64 " us (got %" PRIu64 ")", good_durations[i].text,
		    good_durations[i].want, v);
	}
	for (i = 0; i < N(bad_durations); i++) {
		const char *t = show(name, sizeof(name), bad_durations[i].text);

		v = SENTINEL;
		bt_error_clear();
		rc = parse_duration(bad_durations[i].text, &v);
		is_int(rc, bad_durations[i].rc,
		    "parse_duration rejects '%s' with %s", t,
		    bt_strerror(bad_durations[i].rc));
		ok(v == SENTINEL, "parse_duration('%s') leaves the output "
		    "alone", t);
		ok(strncmp(bt_error_detail(), "duration '", 10) == 0,
		    "parse_duration('%s') records a detail: %s", t,
		    bt_error_detail());
	}
}

/* The detail quotes the input but stays one short line. */
static void
test_detail_is_one_line(void)
{
	char text[400];

	memset(text, '7', sizeof(text) - 2);
	text[sizeof(text) - 2] = '\n';
	text[sizeof(text) - 1] = '\0';
	is_int(parse_size(text, &(uint64_t){ 0 }), -EINVAL,
	    "a long size with a newline is rejected");
	ok(strchr(bt_error_detail(), '\n') == NULL &&
	    strlen(bt_error_detail()) < 160,
	    "its detail is one short line: %s", bt_error_detail());
	is_int(parse_duration("1\x01s", &(uint64_t){ 0 }), -EINVAL,
	    "a control byte in a duration is rejected");
	ok(strstr(bt_error_detail(), "\\x01") != NULL,
	    "the control byte is escaped in the detail: %s",
	    bt_error_detail());
}

static void
test_format(void)
{
	static const struct {
		uint64_t v;
		const char *want;
	} sizes[] = {
		{ 0, "0" },
		{ 1, "1" },
		{ 1023, "1023" },
		{ KIB, "1k" },
		{ 1536, "1536" },
		{ 64 * KIB, "64k" },
		{ 256 * KIB, "256k" },
		{ MIB, "1m" },
		{ MIB + KIB, "1025k" },
		{ GIB, "1g" },
		{ GIB + GIB / 2, "1536m" },
		{ 1024 * GIB, "1024g" },
		{ UINT64_C(17179869183) * GIB, "17179869183g" },
		{ UINT64_MAX, "18446744073709551615" },
	}, durations[] = {
		{ 0, "0s" },
		{ SEC, "1s" },
		{ 90 * SEC, "90s" },
		{ MIN, "1m" },
		{ 90 * MIN, "90m" },
		{ HOUR, "1h" },
		{ 36 * HOUR, "36h" },
		{ DAY, "1d" },
		{ 7 * DAY, "7d" },
		{ 1500, "1500us" },
		{ SEC + 1, "1000001us" },
		{ UINT64_MAX, "18446744073709551615us" },
	};
	char buf[UNITS_STRLEN], small[4];
	size_t i;

	for (i = 0; i < N(sizes); i++) {
		memset(buf, 'x', sizeof(buf));
		ok(format_size(buf, sizeof(buf), sizes[i].v) == buf &&
		    strcmp(buf, sizes[i].want) == 0,
		    "format_size(%" PRIu64 ") = '%s' (got '%s')", sizes[i].v,
		    sizes[i].want, buf);
	}
	for (i = 0; i < N(durations); i++) {
		memset(buf, 'x', sizeof(buf));
		ok(format_duration(buf, sizeof(buf), durations[i].v) == buf &&
		    strcmp(buf, durations[i].want) == 0,
		    "format_duration(%" PRIu64 ") = '%s' (got '%s')",
		    durations[i].v, durations[i].want, buf);
	}
	memset(small, 'x', sizeof(small));
	format_size(small, 3, 64 * KIB);
	ok(strcmp(small, "64") == 0 && small[3] == 'x',
	    "format_size truncates to its size and terminates");
	memset(small, 'x', sizeof(small));
	format_duration(small, 0, 7 * DAY);
	ok(small[0] == 'x', "format_duration with size 0 writes nothing");
}

/* Anything format_* writes (as parse_* spellings), parse_* reads back. */
static void
test_round_trip(void)
{
	static const uint64_t size_scale[] = { 1, KIB, MIB, GIB };
	static const uint64_t duration_scale[] = { SEC, MIN, HOUR, DAY };
	uint64_t seed = tap_seed(), state = seed, v, got, scale;
	char buf[UNITS_STRLEN];
	int nbad_sizes = 0, nbad_durations = 0, i;

	for (i = 0; i < 20000; i++) {
		uint64_t r = tap_rand(&state);

		/* Mostly small multiples of a unit, sometimes any value. */
		if (i % 4 == 0)
			v = r;
		else
			v = (r >> (r % 50 + 14)) * size_scale[r % 4];
		got = SENTINEL;
		format_size(buf, sizeof(buf), v);
		if (parse_size(buf, &got) != 0 || got != v) {
			if (nbad_sizes++ == 0)
				diag("size %" PRIu64 " -> '%s' -> %" PRIu64,
				    v, buf, got);
		}
		scale = duration_scale[(r >> 8) % 4];
		v = (r >> (r % 40 + 24)) % (UINT64_MAX / scale + 1) * scale;
		got = SENTINEL;
		format_duration(buf, sizeof(buf), v);
		if (parse_duration(buf, &got) != 0 || got != v) {
			if (nbad_durations++ == 0)
				diag("duration %" PRIu64 " -> '%s' -> %" PRIu64,
				    v, buf, got);
		}
	}
	is_int(nbad_sizes, 0, "20000 random sizes survive format then parse");
	is_int(nbad_durations, 0,
	    "20000 random whole-second durations survive format then parse");
}

int
main(void)
{
	test_parse_size();
	test_parse_duration();
	test_detail_is_one_line();
	test_format();
	test_round_trip();
	return tap_done();
}
