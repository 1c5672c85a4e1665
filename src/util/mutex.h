/*
 * mutex.h - a mutex that knows its holder, so that "caller holds m" is a
 * check rather than prose.
 *
 * A thin wrapper over pthread_mutex_t.  Unless NDEBUG is defined
 * (configure --disable-assert), it records the holding thread, and
 * mutex_assert_held() aborts when the calling thread does not hold the
 * mutex: the C counterpart of LevelDB's Mutex::AssertHeld().  With NDEBUG
 * the record and the check compile away.
 *
 * Locking and unlocking cannot fail for a mutex that was initialized and
 * is used correctly; misuse is a bug, reported by assert().
 */
#ifndef TABLETFS_UTIL_MUTEX_H
#define TABLETFS_UTIL_MUTEX_H

#include <assert.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

struct mutex {
	pthread_mutex_t mu;
#ifndef NDEBUG
	/* the holding thread (mutex.c's self()), 0 when free */
	atomic_uintptr_t holder;
#endif
};

/* 0 or -errno (pthread_mutex_init's). */
int mutex_init(struct mutex *m);
void mutex_destroy(struct mutex *m);
void mutex_lock(struct mutex *m);
/* 0 when taken, 1 when another thread holds it. */
int mutex_trylock(struct mutex *m);
void mutex_unlock(struct mutex *m);

#ifndef NDEBUG
/* Abort unless the calling thread holds m. */
void mutex_assert_held(const struct mutex *m);
/* Abort if the calling thread holds m (it is about to take it). */
void mutex_assert_not_held(const struct mutex *m);
#else
#define mutex_assert_held(m) ((void)(m))
#define mutex_assert_not_held(m) ((void)(m))
#endif

/*
 * pthread_cond_wait() and pthread_cond_timedwait() on m, keeping the
 * holder record right across the wait.  cond_timedwait returns 0, or
 * ETIMEDOUT when abstime passed.
 */
void cond_wait(pthread_cond_t *c, struct mutex *m);
int cond_timedwait(pthread_cond_t *c, struct mutex *m,
    const struct timespec *abstime);

#endif
