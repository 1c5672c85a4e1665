/*
 * mutex.c - a mutex that knows its holder (see mutex.h).
 */
#include "mutex.h"

#include <errno.h>
#include <stdint.h>

#ifndef NDEBUG
/* The calling thread, named by the address of a thread-local byte (no
 * system call, unlike gettid(), and distinct among live threads). */
static uintptr_t
self(void)
{
	static _Thread_local char me;

	return (uintptr_t)&me;
}

static void
holder_set(struct mutex *m)
{
	atomic_store_explicit(&m->holder, self(), memory_order_relaxed);
}

static void
holder_clear(struct mutex *m)
{
	assert(atomic_load_explicit(&m->holder, memory_order_relaxed) ==
	    self());
	atomic_store_explicit(&m->holder, 0, memory_order_relaxed);
}

void
mutex_assert_held(const struct mutex *m)
{
	assert(atomic_load_explicit(&m->holder, memory_order_relaxed) ==
	    self());
	(void)m;
}

void
mutex_assert_not_held(const struct mutex *m)
{
	assert(atomic_load_explicit(&m->holder, memory_order_relaxed) !=
	    self());
	(void)m;
}
#else
#define holder_set(m) ((void)(m))
#define holder_clear(m) ((void)(m))
#endif

int
mutex_init(struct mutex *m)
{
	int rc = pthread_mutex_init(&m->mu, NULL);

#ifndef NDEBUG
	atomic_init(&m->holder, 0);
#endif
	return -rc;
}

void
mutex_destroy(struct mutex *m)
{
#ifndef NDEBUG
	assert(atomic_load_explicit(&m->holder, memory_order_relaxed) == 0);
#endif
	pthread_mutex_destroy(&m->mu);
}

void
mutex_lock(struct mutex *m)
{
	int rc = pthread_mutex_lock(&m->mu);

	assert(rc == 0);
	(void)rc;
	holder_set(m);
}

int
mutex_trylock(struct mutex *m)
{
	int rc = pthread_mutex_trylock(&m->mu);

	if (rc == EBUSY)
		return 1;
	assert(rc == 0);
	holder_set(m);
	return 0;
}

void
mutex_unlock(struct mutex *m)
{
	int rc;

	holder_clear(m);
	rc = pthread_mutex_unlock(&m->mu);
	assert(rc == 0);
	(void)rc;
}

void
cond_wait(pthread_cond_t *c, struct mutex *m)
{
	int rc;

	holder_clear(m);
	rc = pthread_cond_wait(c, &m->mu);
	assert(rc == 0);
	(void)rc;
	holder_set(m);
}

int
cond_timedwait(pthread_cond_t *c, struct mutex *m,
    const struct timespec *abstime)
{
	int rc;

	holder_clear(m);
	rc = pthread_cond_timedwait(c, &m->mu, abstime);
	assert(rc == 0 || rc == ETIMEDOUT);
	holder_set(m);
	return rc;
}
