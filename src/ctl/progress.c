/*
 * progress.c - a one-line progress display on c->err for tabletctl's long
 * commands (import, export, compact --major).  It draws only when that
 * stream is a terminal, at most ten times a second, and erases itself at
 * the end, so that scripts and logs never see it.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "ctl/ctl.h"

#define PROGRESS_WIDTH		30
#define PROGRESS_INTERVAL	0.1	/* seconds between redraws */
#define PROGRESS_TICK_NS	250000000L

static double
seconds_between(const struct timespec *from, const struct timespec *to)
{
	return (double)(to->tv_sec - from->tv_sec) +
	    (double)(to->tv_nsec - from->tv_nsec) / 1e9;
}

void
progress_init(struct progress *p, bool on, FILE *f, const char *label,
    uint64_t total)
{
	memset(p, 0, sizeof(*p));
	p->on = on;
	p->f = f;
	p->label = label;
	p->total = total;
	clock_gettime(CLOCK_MONOTONIC, &p->start);
}

void
progress_update(struct progress *p, uint64_t done, const char *note)
{
	char bar[PROGRESS_WIDTH + 1];
	struct timespec now;
	double frac;
	int fill;

	if (!p->on)
		return;
	clock_gettime(CLOCK_MONOTONIC, &now);
	if (p->drawn && seconds_between(&p->last, &now) < PROGRESS_INTERVAL)
		return;
	p->last = now;
	p->drawn = true;
	if (p->total == 0) {
		fprintf(p->f, "\r%s: %s (%.0fs)\033[K", p->label, note,
		    seconds_between(&p->start, &now));
		return;
	}
	frac = done >= p->total ? 1.0 : (double)done / (double)p->total;
	fill = (int)(frac * PROGRESS_WIDTH);
	memset(bar, '#', (size_t)fill);
	memset(bar + fill, ' ', (size_t)(PROGRESS_WIDTH - fill));
	bar[PROGRESS_WIDTH] = '\0';
	fprintf(p->f, "\r%s: [%s] %3d%% %s\033[K", p->label, bar,
	    (int)(frac * 100), note);
}

void
progress_finish(struct progress *p)
{
	if (p->on && p->drawn)
		fputs("\r\033[K", p->f);
	p->drawn = false;
}

/* The thread that redraws the elapsed time until told to stop. */
struct ticker {
	struct progress *p;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool stop;
};

static void *
ticker_main(void *arg)
{
	struct ticker *t = arg;
	struct timespec until;

	pthread_mutex_lock(&t->mu);
	while (!t->stop) {
		progress_update(t->p, 0, "running");
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += PROGRESS_TICK_NS;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&t->cv, &t->mu, &until);
	}
	pthread_mutex_unlock(&t->mu);
	return NULL;
}

int
progress_run(struct progress *p, int (*fn)(void *), void *arg)
{
	struct ticker t;
	pthread_t thread;
	int rc;

	if (!p->on)
		return fn(arg);
	t.p = p;
	t.stop = false;
	pthread_mutex_init(&t.mu, NULL);
	pthread_cond_init(&t.cv, NULL);
	if (pthread_create(&thread, NULL, ticker_main, &t) != 0) {
		rc = fn(arg);
		goto out;
	}
	rc = fn(arg);
	pthread_mutex_lock(&t.mu);
	t.stop = true;
	pthread_cond_signal(&t.cv);
	pthread_mutex_unlock(&t.mu);
	pthread_join(thread, NULL);
	progress_finish(p);
out:
	pthread_cond_destroy(&t.cv);
	pthread_mutex_destroy(&t.mu);
	return rc;
}
