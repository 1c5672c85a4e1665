/*
 * bench_report.c - tabletbench's output: the progress line of each
 * benchmark as an engine finishes it, then a table per benchmark of every
 * engine's medians with the ratio tabletfs/engine, in text and in JSON.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"

#define REPORT_BASE	"tabletfs"	/* the engine ratios are taken of */

void
bench_result_print_header(FILE *f)
{
	fprintf(f, "%-9s %-22s %3s %9s %10s %7s %8s %9s %9s %8s %7s  %s\n",
	    "engine", "benchmark", "thr", "ops", "ops/s", "MB/s", "secs",
	    "p50_us", "p99_us", "rss_MB", "cpu_us", "note");
}

void
bench_result_print(FILE *f, const char *engine, const struct bench_slot *sl,
    const struct bench_result *r)
{
	if (r->skipped) {
		fprintf(f, "%-9s %-22s %3u %s\n", engine, sl->label,
		    sl->threads, r->note);
		fflush(f);
		return;
	}
	fprintf(f, "%-9s %-22s %3u %9" PRIu64 " %10.0f %7.1f %8.3f %9.1f "
	    "%9.1f %8.1f %7.2f  %s", engine, sl->label, sl->threads, r->ops,
	    r->ops_per_sec, r->mb_per_sec, r->secs, r->p50_us, r->p99_us,
	    (double)r->peak_rss_kib / 1024.0, r->cpu_us, r->note);
	if (r->mismatches > 0)
		fprintf(f, "%sMISMATCHES %" PRIu64, *r->note != '\0' ? ", " :
		    "", r->mismatches);
	fprintf(f, "\n");
	fflush(f);
}

static const struct bench_result *
report_at(const struct bench_report *rep, size_t run, size_t e, size_t i)
{
	return &rep->results[(run * rep->nengines + e) * rep->nslots + i];
}

static int
result_cmp_speed(const void *a, const void *b)
{
	const struct bench_result *x = *(const struct bench_result *const *)a;
	const struct bench_result *y = *(const struct bench_result *const *)b;

	return (x->ops_per_sec > y->ops_per_sec) -
	    (x->ops_per_sec < y->ops_per_sec);
}

void
bench_report_median(const struct bench_report *rep, size_t e, size_t i,
    struct bench_result *med)
{
	size_t runs = rep->runs, mid = (runs - 1) / 2;
	const struct bench_result **v = calloc(runs, sizeof(*v));
	uint64_t mismatches = 0;

	if (v == NULL)
		abort();
	for (size_t r = 0; r < runs; r++) {
		v[r] = report_at(rep, r, e, i);
		mismatches += v[r]->mismatches;
	}
	qsort(v, runs, sizeof(*v), result_cmp_speed);
	*med = *v[mid];
	if (runs % 2 == 0) {
		med->ops_per_sec = (v[mid]->ops_per_sec +
		    v[mid + 1]->ops_per_sec) / 2;
		med->mb_per_sec = (v[mid]->mb_per_sec +
		    v[mid + 1]->mb_per_sec) / 2;
	}
	med->mismatches = mismatches;
	free(v);
}

/* The index of the base engine, or nengines when it did not run. */
static size_t
report_base(const struct bench_report *rep)
{
	size_t e;

	for (e = 0; e < rep->nengines; e++)
		if (strcmp(rep->engines[e], REPORT_BASE) == 0)
			break;
	return e;
}

/* tabletfs/engine e for slot i; 0 when either is missing. */
static double
report_ratio(const struct bench_report *rep, size_t e, size_t i)
{
	size_t base = report_base(rep);
	struct bench_result mine, theirs;

	if (base == rep->nengines)
		return 0;
	bench_report_median(rep, base, i, &mine);
	bench_report_median(rep, e, i, &theirs);
	if (mine.skipped || theirs.skipped || theirs.ops_per_sec <= 0)
		return 0;
	return mine.ops_per_sec / theirs.ops_per_sec;
}

void
bench_report_tables(FILE *f, const struct bench_report *rep)
{
	size_t base = report_base(rep);

	for (size_t i = 0; i < rep->nslots; i++) {
		const struct bench_slot *sl = &rep->slots[i];

		fprintf(f, "\n%s, %u thread%s\n", sl->label, sl->threads,
		    sl->threads == 1 ? "" : "s");
		fprintf(f, "  %-9s %11s %8s %9s %9s %8s %9s  %s\n", "engine",
		    "ops/s", "MB/s", "p50_us", "p99_us", "rss_MB",
		    "tfs/this", "note");
		for (size_t e = 0; e < rep->nengines; e++) {
			struct bench_result r;
			double ratio = report_ratio(rep, e, i);
			char rtext[16];

			bench_report_median(rep, e, i, &r);
			if (r.skipped) {
				fprintf(f, "  %-9s %s\n", rep->engines[e],
				    r.note);
				continue;
			}
			if (e == base || ratio <= 0)
				snprintf(rtext, sizeof(rtext), "-");
			else
				snprintf(rtext, sizeof(rtext), "%.2fx", ratio);
			fprintf(f, "  %-9s %11.0f %8.1f %9.1f %9.1f %8.1f %9s"
			    "  %s", rep->engines[e], r.ops_per_sec,
			    r.mb_per_sec, r.p50_us, r.p99_us,
			    (double)r.peak_rss_kib / 1024.0, rtext, r.note);
			if (r.mismatches > 0)
				fprintf(f, "%sMISMATCHES %" PRIu64,
				    *r.note != '\0' ? ", " : "", r.mismatches);
			fprintf(f, "\n");
		}
	}
	fflush(f);
}

void
bench_report_json(FILE *f, const struct bench_report *rep)
{
	fprintf(f, "[");
	for (size_t i = 0; i < rep->nslots; i++) {
		const struct bench_slot *sl = &rep->slots[i];

		fprintf(f, "%s\n  {\"name\": ", i > 0 ? "," : "");
		bench_json_string(f, sl->label);
		fprintf(f, ", \"threads\": %u, \"engines\": [", sl->threads);
		for (size_t e = 0; e < rep->nengines; e++) {
			struct bench_result r;

			bench_report_median(rep, e, i, &r);
			fprintf(f, "%s\n    {\"engine\": ", e > 0 ? "," : "");
			bench_json_string(f, rep->engines[e]);
			fprintf(f, ", \"skipped\": %s, \"ops\": %" PRIu64
			    ", \"secs\": %.6f, \"ops_per_sec\": %.1f, "
			    "\"mb_per_sec\": %.3f, \"p50_us\": %.2f, "
			    "\"p99_us\": %.2f, \"peak_rss_kib\": %ld, "
			    "\"cpu_us\": %.3f, "
			    "\"mismatches\": %" PRIu64 ", \"ratio\": %.4f, "
			    "\"note\": ", r.skipped ? "true" : "false", r.ops,
			    r.secs, r.ops_per_sec, r.mb_per_sec, r.p50_us,
			    r.p99_us, r.peak_rss_kib, r.cpu_us, r.mismatches,
			    report_ratio(rep, e, i));
			bench_json_string(f, r.note);
			fprintf(f, ", \"runs_ops_per_sec\": [");
			for (size_t run = 0; run < rep->runs; run++)
				fprintf(f, "%s%.1f", run > 0 ? ", " : "",
				    report_at(rep, run, e, i)->ops_per_sec);
			fprintf(f, "]}");
		}
		fprintf(f, "]}");
	}
	fprintf(f, "\n ]");
}
