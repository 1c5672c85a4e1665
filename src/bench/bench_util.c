/*
 * bench_util.c - tabletbench's helpers: counters for engines without
 * one, clock, random numbers and permutations, latency histograms, machine
 * facts, tree removal, JSON, peak RSS.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench.h"

void
bench_stripes_init(struct bench_stripes *s)
{
	for (int i = 0; i < BENCH_STRIPES; i++)
		pthread_mutex_init(&s->lock[i], NULL);
}

void
bench_stripes_release(struct bench_stripes *s)
{
	for (int i = 0; i < BENCH_STRIPES; i++)
		pthread_mutex_destroy(&s->lock[i]);
}

int
bench_counter_parse(const void *p, size_t n, int64_t *out)
{
	const char *s = p;
	bool neg = false;
	uint64_t v = 0;
	size_t i = 0;

	if (n > 0 && s[n - 1] == '\n')
		n--;
	if (n > 0 && s[0] == '-') {
		neg = true;
		i++;
	}
	if (i == n || n - i > 19)
		return -EINVAL;
	for (; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -EINVAL;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	if (v > (uint64_t)INT64_MAX)
		return -EINVAL;
	*out = neg ? -(int64_t)v : (int64_t)v;
	return 0;
}

/* FNV-1a over the bytes, mixed. */
static uint64_t
bench_bytes_hash(struct bench_bytes b)
{
	const unsigned char *p = b.p;
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < b.n; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return bench_mix64(h);
}

int
bench_counter_add(const struct engine *e, struct bench_stripes *s,
    void *db, struct bench_bytes key, int64_t delta, int64_t *result)
{
	pthread_mutex_t *lock = &s->lock[bench_bytes_hash(key) %
	    BENCH_STRIPES];
	struct bench_buf value = { 0 };
	char text[24];
	int64_t v = 0;
	int rc, n;

	pthread_mutex_lock(lock);
	if ((rc = e->get(db, key, &value)) < 0)
		goto out;
	if (rc == 0 && (rc = bench_counter_parse(value.p, value.n, &v)) < 0)
		goto out;
	if ((delta > 0 && v > INT64_MAX - delta) ||
	    (delta < 0 && v < INT64_MIN - delta)) {
		rc = -ERANGE;
		goto out;
	}
	v += delta;
	n = snprintf(text, sizeof(text), "%" PRId64 "\n", v);
	if ((rc = e->put(db, key, (struct bench_bytes){ text, (size_t)n },
	    false)) < 0)
		goto out;
	*result = v;
	rc = 0;
out:
	pthread_mutex_unlock(lock);
	free(value.p);
	return rc;
}

int
bench_buf_reserve(struct bench_buf *b, size_t n)
{
	size_t cap = b->cap != 0 ? b->cap : 64;
	char *p;

	if (n <= b->cap)
		return 0;
	while (cap < n)
		cap *= 2;
	if ((p = realloc(b->p, cap)) == NULL)
		return -ENOMEM;
	b->p = p;
	b->cap = cap;
	return 0;
}

uint64_t
bench_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

double
bench_now_us(void)
{
	return (double)bench_now_ns() / 1e3;
}

static int
double_compare(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

double
bench_quantile(double *v, size_t n, double q)
{
	qsort(v, n, sizeof(*v), double_compare);
	return v[(size_t)(q * (double)(n - 1))];
}

uint64_t
bench_thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t
bench_mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

uint64_t
bench_rand(uint64_t *state)
{
	uint64_t x = *state != 0 ? *state : 0x2545f4914f6cdd1dull;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * 0x2545f4914f6cdd1dull;
}

void
bench_perm_init(struct bench_perm *p, uint64_t n, uint64_t seed)
{
	unsigned bits = 1;

	while (bits < 64 && (UINT64_C(1) << bits) < n)
		bits++;
	p->n = n;
	p->mask = bits == 64 ? UINT64_MAX : (UINT64_C(1) << bits) - 1;
	p->shift = (bits + 1) / 2;
	for (int i = 0; i < 3; i++)
		p->mul[i] = bench_mix64(seed + (uint64_t)i) | 1;
	p->add = bench_mix64(seed + 3);
}

uint64_t
bench_perm_at(const struct bench_perm *p, uint64_t i)
{
	uint64_t x = i;

	do {
		x = (x * p->mul[0] + p->add) & p->mask;
		x ^= x >> p->shift;
		x = (x * p->mul[1]) & p->mask;
		x ^= x >> p->shift;
		x = (x * p->mul[2]) & p->mask;
		x ^= x >> p->shift;
	} while (x >= p->n);
	return x;
}

void
bench_hist_add(struct bench_hist *h, uint64_t ns)
{
	unsigned e, idx;

	if (ns < HIST_LINEAR) {
		idx = (unsigned)ns;
	} else {
		e = 63u - (unsigned)__builtin_clzll(ns);
		idx = HIST_LINEAR + (e - HIST_SUB_BITS - 1) *
		    (1u << HIST_SUB_BITS) + (unsigned)((ns >>
		    (e - HIST_SUB_BITS)) & ((1u << HIST_SUB_BITS) - 1));
	}
	h->buckets[idx]++;
	h->count++;
}

void
bench_hist_merge(struct bench_hist *into, const struct bench_hist *h)
{
	for (unsigned i = 0; i < HIST_BUCKETS; i++)
		into->buckets[i] += h->buckets[i];
	into->count += h->count;
}

/* The middle of bucket idx, in nanoseconds. */
static double
hist_bucket_mid(unsigned idx)
{
	unsigned g, sub, e;

	if (idx < HIST_LINEAR)
		return idx;
	g = (idx - HIST_LINEAR) >> HIST_SUB_BITS;
	sub = (idx - HIST_LINEAR) & ((1u << HIST_SUB_BITS) - 1);
	e = g + HIST_SUB_BITS + 1;
	return (double)((UINT64_C(1) << HIST_SUB_BITS) + sub) *
	    (double)(UINT64_C(1) << (e - HIST_SUB_BITS)) +
	    (double)(UINT64_C(1) << (e - HIST_SUB_BITS)) / 2;
}

double
bench_hist_quantile(const struct bench_hist *h, double q)
{
	uint64_t want, seen = 0;

	if (h->count == 0)
		return 0;
	want = (uint64_t)(q * (double)h->count + 0.999999);
	if (want == 0)
		want = 1;
	for (unsigned i = 0; i < HIST_BUCKETS; i++) {
		seen += h->buckets[i];
		if (seen >= want)
			return hist_bucket_mid(i);
	}
	return hist_bucket_mid(HIST_BUCKETS - 1);
}

void
bench_machine_get(struct bench_machine *m)
{
	char line[512], *p;
	FILE *f;
	long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);

	m->cpus = sysconf(_SC_NPROCESSORS_ONLN);
	if (getloadavg(&m->load, 1) != 1)
		m->load = -1;
	m->ram = pages > 0 && psize > 0 ? (uint64_t)pages * (uint64_t)psize :
	    0;
	snprintf(m->model, sizeof(m->model), "unknown");
	if ((f = fopen("/proc/cpuinfo", "r")) == NULL)
		return;
	while (fgets(line, sizeof(line), f) != NULL) {
		if (strncmp(line, "model name", 10) != 0 ||
		    (p = strchr(line, ':')) == NULL)
			continue;
		p += strspn(p + 1, " \t") + 1;
		p[strcspn(p, "\n")] = '\0';
		snprintf(m->model, sizeof(m->model), "%s", p);
		break;
	}
	fclose(f);
}

/* Run "git [-C dir] args" through the shell (dir "" for the current
 * directory); its first output line into buf.  0, or -1 on failure. */
static int
git_line(const char *dir, const char *args, char *buf, size_t size)
{
	char cmd[PATH_MAX * 4 + 128];
	size_t n = 0;
	FILE *f;
	int ok;

	n += (size_t)snprintf(cmd, sizeof(cmd), "git");
	if (*dir != '\0') {
		n += (size_t)snprintf(cmd + n, sizeof(cmd) - n, " -C '");
		for (const char *s = dir; *s != '\0'; s++)
			n += (size_t)snprintf(cmd + n, sizeof(cmd) - n, "%s",
			    *s == '\'' ? "'\\''" : (char[]){ *s, '\0' });
		n += (size_t)snprintf(cmd + n, sizeof(cmd) - n, "'");
	}
	snprintf(cmd + n, sizeof(cmd) - n, " %s", args);
	if ((f = popen(cmd, "r")) == NULL)
		return -1;
	ok = fgets(buf, (int)size, f) != NULL;
	if (pclose(f) != 0 || !ok)
		return -1;
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

/*
 * The commit of the tree this file was compiled from (its directory, when
 * __FILE__ is absolute as in out-of-tree builds), else of the current
 * directory; "-dirty" when the work tree differs from it outside bench/.
 */
void
bench_git_commit(char *buf, size_t size)
{
	static const char rev[] = "rev-parse --short HEAD 2>/dev/null";
	/* bench/ holds results (scripts/bench writes them as it runs). */
	static const char dirty_test[] = "diff --quiet HEAD -- . ':!bench' "
	    "2>/dev/null || echo dirty";
	char dir[PATH_MAX], dirty[16], *slash;
	const char *where = "";

	snprintf(dir, sizeof(dir), "%s", __FILE__);
	if (dir[0] == '/' && strlen(__FILE__) < sizeof(dir) &&
	    (slash = strrchr(dir, '/')) != NULL) {
		*slash = '\0';
		where = dir;
	}
	if (git_line(where, rev, buf, size) < 0 && (*where == '\0' ||
	    git_line(where = "", rev, buf, size) < 0)) {
		snprintf(buf, size, "unknown");
		return;
	}
	if (git_line(where, dirty_test, dirty, sizeof(dirty)) == 0 &&
	    strlen(buf) + 7 < size)
		strcat(buf, "-dirty");
}

static int
tree_remove_entry(const char *path, const struct stat *st, int flag,
    struct FTW *ftw)
{
	if (remove(path) < 0 && errno != ENOENT)
		return -errno;
	return 0;
}

int
bench_tree_remove(const char *path)
{
	int rc = nftw(path, tree_remove_entry, 16, FTW_DEPTH | FTW_PHYS);

	if (rc == -1)
		return errno == ENOENT ? 0 : -errno;
	return rc;
}

void
bench_fs_settle(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		return;
	(void)syncfs(fd);
	close(fd);
}

void
bench_json_string(FILE *f, const char *s)
{
	putc('"', f);
	for (; *s != '\0'; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			putc(c, f);
	}
	putc('"', f);
}

void
bench_rss_reset(void)
{
	FILE *f = fopen("/proc/self/clear_refs", "w");

	if (f == NULL)
		return;
	fputs("5", f);
	fclose(f);
}

long
bench_rss_peak_kib(void)
{
	struct rusage ru;
	char line[256];
	long kib = -1;
	FILE *f;

	if ((f = fopen("/proc/self/status", "r")) != NULL) {
		while (fgets(line, sizeof(line), f) != NULL)
			if (strncmp(line, "VmHWM:", 6) == 0) {
				kib = strtol(line + 6, NULL, 10);
				break;
			}
		fclose(f);
	}
	if (kib < 0) {
		getrusage(RUSAGE_SELF, &ru);
		kib = ru.ru_maxrss;
	}
	return kib;
}
