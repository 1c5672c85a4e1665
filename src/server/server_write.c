/*
 * server_write.c - the write pipeline (mutations, check-and-mutate,
 * increment, append) and reads and scans of the tablet server (server.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "log/format.h"
#include "server/server_int.h"
#include "util/alloc.h"
#include "util/error.h"
#include "util/hash.h"

/* BT_STALE when tablet is not 0 and is not the tablet serving row. */
static int
tablet_check_serves(struct server_table *t, uint64_t tablet, struct slice row)
{
	if (tablet == 0 || server_table_serves_row(t, tablet, row))
		return 0;
	return BT_STALE;
}

/* ---- Writes ---- */

static struct mutex *
row_lock(struct server *s, uint64_t table_id, struct slice row)
{
	return &s->row_locks[hash64(row, table_id) % ROW_LOCKS];
}

/* Check a mutation against the limits and the schema. */
static int
mutation_validate(struct server *s, struct server_table *t,
    const struct tablet_schema *schema, struct slice row,
    const struct mutation *ops, size_t count)
{
	int rc = 0;

	if (row.n == 0 || row.n > SERVER_MAX_ROW)
		return bt_error_set(-EINVAL, "row key of %zu bytes (1 to %u "
		    "allowed)", row.n, SERVER_MAX_ROW);
	if (count == 0)
		return bt_error_set(-EINVAL, "empty mutation");
	for (size_t i = 0; i < count && rc == 0; i++) {
		const struct mutation *m = &ops[i];

		if (m->kind < MUTATION_PUT || m->kind > MUTATION_DELETE_ROW) {
			rc = bt_error_set(-EINVAL, "unknown mutation kind %d",
			    (int)m->kind);
		} else if (m->kind != MUTATION_DELETE_ROW &&
		    !tablet_schema_has_family(schema, m->family)) {
			rc = bt_error_set(-ENOENT, "table %s: no family "
			    "%.*s", t->name, (int)m->family.n,
			    (const char *)m->family.p);
		} else if (m->qualifier.n > SERVER_MAX_QUALIFIER) {
			rc = bt_error_set(-EINVAL, "qualifier of %zu bytes "
			    "(at most %u allowed)", m->qualifier.n,
			    SERVER_MAX_QUALIFIER);
		} else if (m->kind == MUTATION_PUT &&
		    m->value.n > s->opts.max_cell) {
			rc = bt_error_set(-EFBIG, "value of %zu bytes (at "
			    "most %" PRIu64 " allowed)", m->value.n,
			    s->opts.max_cell);
		} else if ((m->kind == MUTATION_PUT &&
		    m->ts != MUTATION_TS_SERVER && m->ts < 0) ||
		    (m->kind == MUTATION_DELETE_VERSION && m->ts < 0)) {
			rc = bt_error_set(-EINVAL, "timestamp %" PRId64
			    " out of range", m->ts);
		}
	}
	return rc;
}

/* Whether writers must wait for flushes: the active and frozen memtables
 * of all tablets together hold the whole memtable budget.  A memtable is
 * frozen at half of it (master_freeze_size()), so one frozen memtable
 * flushing while the next fills is the normal state, as LevelDB's imm
 * beside its mem; a writer waits only when the next one has filled too
 * before the flush ended. */
static bool
write_must_wait(struct server *s)
{
	int64_t held = atomic_load(&s->active_bytes) +
	    atomic_load(&s->frozen_bytes);

	return held >= (int64_t)s->opts.memtable_size;
}

/*
 * Wait while the memtable budget is full (write_must_wait()), waking the
 * background thread, which freezes and flushes; a flush finished in the
 * middle of a compaction wakes waiters too (server.c).  Memory never
 * grows without bound: when a background round that began after this
 * writer came ends with a memtable it could not flush (a full disk) and
 * the budget is still full, the write fails with the flush's error
 * instead of waiting, and writes resume once flushes do.  A round that
 * was already running may have failed before room was freed, and the
 * errors of compactions are not the writer's: neither fails it.
 */
static int
write_throttle(struct server *s)
{
	uint64_t begun;
	int rc = 0;

	if (!write_must_wait(s))
		return 0;
	mutex_lock(&s->bg_mu);
	begun = s->bg_begun;
	while (write_must_wait(s) && !s->bg_stop) {
		if (s->bg_rounds > begun && s->bg_flush_error < 0) {
			rc = bt_error_set(s->bg_flush_error, "the memtables "
			    "are full and their flush fails: %s",
			    bt_strerror(s->bg_flush_error));
			break;
		}
		s->bg_wanted = true;
		s->write_waits++;
		pthread_cond_signal(&s->bg_cv);
		cond_wait(&s->bg_done_cv, &s->bg_mu);
	}
	mutex_unlock(&s->bg_mu);
	return rc;
}

/* ---- The write queue ---- */

/*
 * Mutations are committed in write groups, as LevelDB's DBImpl::Write does
 * with its writer queue: each caller queues a waiter, and the one at the
 * head leads.  The leader takes the waiters queued behind it (up to
 * WRITE_GROUP_BYTES), and for all of them, in queue order, assigns
 * sequence numbers and stamps, writes their log records with one append
 * (fdatasynced once if any of them asked), applies them to their tablets
 * and publishes them to readers; then it hands each its result, wakes it,
 * and passes the lead on.  A follower sleeps once and wakes acknowledged:
 * there is no second turn to wait for, and nothing is acknowledged before
 * the log append (and the sync, when asked) covering it has returned.
 * Waiters sleep outside the queue's mutex, and the leader wakes its
 * group after releasing it, all with one system call (waiter_sleep()):
 * a woken follower returns at once instead of waking only to sleep again
 * on the mutex that its waker holds.
 *
 * A leader whose group needs a sync first gathers: the writers its
 * predecessor acknowledged, and those that queued meanwhile, are likely to
 * come back with another synced write within microseconds, so it waits (at
 * most 1.25 times the recent sync latency, and at most WRITE_GATHER_MAX_US)
 * until that many synced mutations are queued.  Without this, N writers
 * that each wait for their sync settle into two alternating groups of N/2
 * and pay two syncs per round; with it they share one.  A writer alone
 * never waits: it expects only itself.  The writer whose arrival completes
 * the count takes the lead over and runs the group, the waiting leader
 * first in it: the group starts at once, on a thread already running,
 * rather than after the waiting leader has been woken and scheduled.
 * The waiting leader sleeps on until that group is acknowledged, about
 * one sync after it began to wait, so its deadline lies past that: a
 * deadline inside the group's sync (half the sync latency, as it was)
 * woke it there for nothing, and with 4 writers on 2 processors that
 * cost 15 % of the throughput (medians of 5 alternations of 3 runs each:
 * 16,883 ops/s against 19,797).
 */
#define WRITE_GROUP_BYTES	(1u << 20)
/* What a write that a broken store refuses is told. */
#define BROKEN_DETAIL	"an earlier failure left the store's memory " \
	"behind its log or catalog; reopen the store"
#define WRITE_GATHER_MAX_US	2000
#define WRITE_SPIN_MAX_US	1000

/* One mutation in the write queue; lives on its caller's stack.  The
 * leader fills in the results and then stores done (release), which
 * orders them before the waiter reads them; it then wakes the waiter
 * without touching it again, since a done waiter may return at once. */
struct write_waiter {
	struct write_waiter *next;
	uint32_t bit;		/* its bit in q->wakes' futex bitsets */
	_Atomic bool lead;	/* stored (release) when it is to lead */
	struct server_table *t;
	struct tablet *tablet;	/* the leader's: where it is reserved */
	struct slice row;
	struct mutation *ops;
	size_t count;
	size_t bytes;		/* an estimate of its log record */
	bool sync;
	uint64_t spin_ns;	/* how long it polls before it sleeps */
	_Atomic bool done;	/* stored (release) after the results */
	int rc;
	int64_t stamp;
	uint64_t first_seq;
	size_t record_end;	/* in the leader's buffer */
	char detail[256];	/* the leader's detail, when rc < 0 */
};

static uint64_t
monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int
server_queue_init(struct write_queue *q)
{
	memset(q, 0, sizeof(*q));
	buf_init(&q->records);
	return mutex_init(&q->mu);
}

void
server_queue_release(struct write_queue *q)
{
	buf_release(&q->records);
	bt_free(q->slices);
	bt_free(q->positions);
	mutex_destroy(&q->mu);
}

static bool
waiter_wants_sync(const struct server *s, const struct write_waiter *p)
{
	return p->sync || s->opts.sync_always;
}

static void
waiter_fail(struct write_waiter *p, int rc)
{
	p->rc = rc;
	snprintf(p->detail, sizeof(p->detail), "%s", bt_error_detail());
}

static bool
waiter_ready(const struct write_waiter *p)
{
	return atomic_load_explicit(&p->done, memory_order_acquire) ||
	    atomic_load_explicit(&p->lead, memory_order_acquire);
}

/*
 * Before it sleeps, a waiter whose group syncs polls for p->spin_ns
 * (yielding the processor between looks), or until the monotonic
 * deadline: true when it became done or the leader meanwhile.  A futex
 * wake reaches a thread whose processor went idle during the sync only
 * after an inter-processor interrupt and, on a virtual machine, the
 * host's rescheduling of that processor: 30-45 us on this 2-vCPU machine,
 * in every group's critical path.  Polling for up to twice the recent
 * sync latency (at most WRITE_SPIN_MAX_US) took fillsync with 4 writers
 * from about 21,800 to 26,000 ops/s here, for about 50 us of processor
 * time per synced write; RocksDB's writers yield-spin the same way
 * (enable_write_thread_adaptive_yield).  A waiter not asking for a sync
 * waits for a log write of a few microseconds and sleeps at once.
 */
static bool
waiter_spin(const struct write_waiter *p, uint64_t deadline_ns)
{
	uint64_t end;

	if (p->spin_ns == 0)
		return false;
	end = monotonic_ns() + p->spin_ns;
	if (deadline_ns != 0 && end > deadline_ns)
		end = deadline_ns;
	do {
		if (waiter_ready(p))
			return true;
		sched_yield();
	} while (monotonic_ns() < end);
	return waiter_ready(p);
}

/*
 * Sleep until p is done or is to lead, or until the monotonic deadline
 * (in nanoseconds; 0: none) passes: true when woken for one of the two,
 * false at the deadline.  Every waiter sleeps on the one futex word
 * q->wakes, each with a bit of its own, so that a leader wakes its whole
 * group with one FUTEX_WAKE_BITSET: one system call, where a wake per
 * member cost a system call and an inter-processor interrupt each.
 */
static bool
waiter_sleep(struct write_queue *q, struct write_waiter *p,
    uint64_t deadline_ns)
{
	struct timespec deadline = {
		.tv_sec = (time_t)(deadline_ns / 1000000000u),
		.tv_nsec = (long)(deadline_ns % 1000000000u),
	};

	if (waiter_spin(p, deadline_ns))
		return true;
	for (;;) {
		uint32_t seen = atomic_load_explicit(&q->wakes,
		    memory_order_acquire);

		if (waiter_ready(p))
			return true;
		if (syscall(SYS_futex, &q->wakes, FUTEX_WAIT_BITSET_PRIVATE,
		    seen, deadline_ns != 0 ? &deadline : NULL, NULL,
		    p->bit) != 0 && errno == ETIMEDOUT)
			return false;
	}
}

/* Wake the waiters whose bits are in mask (after storing what they wait
 * for). */
static void
waiters_wake(struct write_queue *q, uint32_t mask)
{
	if (mask == 0)
		return;
	atomic_fetch_add_explicit(&q->wakes, 1, memory_order_release);
	syscall(SYS_futex, &q->wakes, FUTEX_WAKE_BITSET_PRIVATE, INT_MAX,
	    NULL, NULL, mask);
}

/*
 * The leader me, at the head of the queue, waits (a bounded time,
 * releasing q->mu) until the synced mutations the last synced group
 * suggests will come are queued.  True, with q->mu held, when me is to
 * lead now; false, without it, when the writer that completed the count
 * took the lead over and ran the group, me in it: me is then done.
 *
 * The wait is timed on the monotonic clock (a clock change cannot
 * stretch it): the writer that takes the lead over only clears
 * q->gatherer, and the one wake me then gets is its group's
 * acknowledgement.  Waking me to say it was taken over would put a futex
 * wake on the way to the group's log write, and a wake-up of a thread
 * that has nothing to do but sleep again.
 */
static bool
write_gather(struct write_queue *q, struct write_waiter *me)
{
	uint64_t wait_ns, end;

	if (q->queued_syncs == 0 || q->queued_syncs >= q->expected_syncs)
		return true;
	wait_ns = q->sync_ns + q->sync_ns / 4;
	if (wait_ns > WRITE_GATHER_MAX_US * 1000ull)
		wait_ns = WRITE_GATHER_MAX_US * 1000ull;
	if (wait_ns == 0)
		return true;
	end = monotonic_ns() + wait_ns;
	q->gatherer = me;
	q->gathers++;
	mutex_unlock(&q->mu);
	/* The only wake a gatherer gets is its group's acknowledgement. */
	if (waiter_sleep(q, me, end))
		return false;	/* taken over, and the group is done */
	mutex_lock(&q->mu);
	if (q->gatherer == me) {
		q->gatherer = NULL;	/* the time is up: lead what came */
		return true;
	}
	/* Taken over just as the time ran out: the wake is coming. */
	mutex_unlock(&q->mu);
	waiter_sleep(q, me, 0);
	return false;
}

/* Room in the leader's scratch for n records. */
static int
write_queue_reserve(struct write_queue *q, size_t n)
{
	struct slice *sl;
	struct log_position *pos;

	if (n <= q->slots)
		return 0;
	if ((sl = bt_realloc(q->slices, n * sizeof(*sl))) == NULL)
		return -ENOMEM;
	q->slices = sl;
	if ((pos = bt_realloc(q->positions, n * sizeof(*pos))) == NULL)
		return -ENOMEM;
	q->positions = pos;
	q->slots = n;
	return 0;
}

/*
 * In the apply turn, before the group's log records are written: find
 * each member's tablet and reserve the memory its apply will take, so
 * that nothing in the apply can fail for memory once the records are in
 * the log.  A split, merge or freeze from elsewhere needs the apply turn
 * too, so the tablets and their memtables stay as found until the apply
 * (which freezes a full memtable only after it).  0, or -ENOMEM, which
 * fails the group before anything is logged.
 */
static int
group_reserve(struct server *s, struct write_waiter *first,
    struct write_waiter *last)
{
	struct write_waiter *p;
	struct tablet *tablet;
	int rc;

	for (p = first;; p = p->next) {
		tablet = server_tablet_map_find(server_table_map_locked(s,
		    p->t), p->row);
		p->tablet = tablet;
		if ((rc = tablet_reserve(tablet, p->row, p->ops,
		    p->count)) < 0)
			return bt_error_set(rc, "no memory to apply a write "
			    "group");
		if (p == last)
			return 0;
	}
}

/*
 * The error for a write that the log refused (rc) since a sync of it
 * failed (or a failed write could not be cut off): that failure's error,
 * said in the store's terms.  The memtables hold only what was
 * acknowledged and are flushed as before; the reopen starts a new log
 * segment.
 */
static int
log_refusal(struct server *s, int rc)
{
	struct log_writer_stats ls;

	log_writer_get_stats(s->log, &ls);
	if (ls.poison == 0)
		return rc;
	return bt_error_set(ls.poison, "the commit log failed (%s) and what "
	    "it holds is not known to be durable: writes are refused until "
	    "the store is reopened", bt_strerror(ls.poison));
}

/*
 * Number the group first..last (n mutations), stamp it, reserve what its
 * apply needs and write its log records with one append (in the apply
 * turn): 0, or the error that fails them all.  Sequence
 * numbers are taken even on failure (the group still takes its turn).
 * *sync_ns is how long a synced append took (0: none was made).  A
 * broken store (s->broken) logs nothing: a write it refuses must not come
 * back when the reopen replays the log.  (A member after one whose apply
 * fails is refused though logged, and its fate is the reopen's: nothing
 * else can break the store between here and the apply, which holds the
 * same turn.)
 */
static int
group_log(struct server *s, struct write_waiter *first,
    struct write_waiter *last, size_t n, bool sync, uint64_t *sync_ns)
{
	struct write_queue *q = &s->writes;
	struct write_waiter *p;
	size_t i = 0, from = 0;
	uint64_t t0, seq;
	int rc;

	*sync_ns = 0;
	/* The leader alone writes next_seq and last_stamp: no lock. */
	seq = atomic_load_explicit(&s->next_seq, memory_order_relaxed);
	for (p = first;; p = p->next) {
		int64_t now = server_now(s);

		if (now <= s->last_stamp)
			now = s->last_stamp + 1;
		s->last_stamp = now;
		p->stamp = now;
		p->first_seq = seq;
		seq += p->count;
		if (p == last)
			break;
	}
	atomic_store_explicit(&s->next_seq, seq, memory_order_relaxed);
	if ((rc = s->broken) < 0)
		return bt_error_set(rc, BROKEN_DETAIL);
	if ((rc = group_reserve(s, first, last)) < 0)
		return rc;

	if ((rc = write_queue_reserve(q, n)) < 0)
		return bt_error_set(rc, "no memory for a write group of %zu",
		    n);
	/* Encode every record into one buffer; the slices point into it
	 * once it stops moving. */
	buf_clear(&q->records);
	for (p = first;; p = p->next) {
		for (size_t j = 0; j < p->count; j++)
			if (p->ops[j].kind == MUTATION_PUT &&
			    p->ops[j].ts == MUTATION_TS_SERVER)
				p->ops[j].ts = p->stamp >= p->ops[j].ts_floor ?
				    p->stamp : p->ops[j].ts_floor;
			else if (p->ops[j].kind != MUTATION_PUT &&
			    p->ops[j].kind != MUTATION_DELETE_VERSION)
				p->ops[j].ts = 0;
		if ((rc = mutation_record_encode(p->first_seq, p->t->id,
		    p->row, p->ops, p->count, &q->records)) < 0)
			return bt_error_set(rc, "encoding a log record: %s",
			    bt_strerror(rc));
		p->record_end = q->records.n;
		if (p == last)
			break;
	}
	for (p = first;; p = p->next) {
		q->slices[i++] = slice_make(q->records.p + from,
		    p->record_end - from);
		from = p->record_end;
		if (p == last)
			break;
	}
	t0 = sync ? monotonic_ns() : 0;	/* a clock read costs */
	rc = log_writer_append_many(s->log, q->slices, n, sync, q->positions);
	if (rc == BT_ECLOSED)
		rc = log_refusal(s, rc);
	server_space_note(s, rc);
	*sync_ns = rc == 0 && sync ? monotonic_ns() - t0 : 0;
	if (q->records.cap > 4 * WRITE_GROUP_BYTES)
		buf_release(&q->records);
	return rc;
}

/*
 * Apply the logged group in sequence order and publish it (log_rc: the
 * log append's result, which fails every member), in the apply turn
 * (s->apply_mu) that group_log() ran in: a split, merge or freeze needs
 * it too, so each mutation lands in the tablet, and the memtable, that
 * group_reserve() found and reserved.  An apply then fails only for a
 * fault other than memory; such a mutation may be in the memtable in
 * part: the store is then broken, and readers never see past the
 * mutation before it (visible_seq stays), so that no part of it is ever
 * read; nothing more is frozen or flushed (master_freeze()), and a reopen
 * replays it whole from the log.
 */
static void
group_apply(struct server *s, struct write_waiter *first,
    struct write_waiter *last, int log_rc)
{
	struct write_waiter *p;
	size_t i = 0;
	uint64_t applied = 0, publish = last->first_seq + last->count - 1;
	int64_t held;
	int arc;

	if (s->broken < 0)
		publish = atomic_load_explicit(&s->visible_seq,
		    memory_order_relaxed);
	for (p = first;; p = p->next) {
		if (log_rc < 0) {
			waiter_fail(p, log_rc);
		} else if (s->broken) {
			waiter_fail(p, bt_error_set(s->broken,
			    BROKEN_DETAIL));
		} else {
			/* Many tablets share one memory budget (master.c). */
			s->applied_bytes += p->bytes;
			if (s->applied_bytes > s->opts.memtable_size / 4) {
				s->applied_bytes = 0;
				server_background_wake(s);
			}
			if ((arc = tablet_apply(p->tablet, p->first_seq,
			    p->row, p->ops, p->count)) < 0) {
				s->broken = bt_error_set(arc, "tablet apply "
				    "failed; reopen the store");
				waiter_fail(p, arc);
				publish = p->first_seq - 1;
			} else {
				p->rc = 0;
				applied++;
			}
			server_segment_note_locked(s,
			    s->writes.positions[i].segment,
			    p->first_seq + p->count - 1);
		}
		i++;
		if (p == last)
			break;
	}
	/* A full memtable is frozen once the group is in it (a write that
	 * failed to log freezes nothing: on a full disk, no flush starts). */
	for (p = first;; p = p->next) {
		if (p->tablet != NULL) {
			tablet_reserve_end(p->tablet);
			if (log_rc == 0 && s->broken == 0 &&
			    tablet_memtable_usage(p->tablet) >=
			    master_freeze_size(s) &&
			    tablet_freeze(p->tablet) == 0)
				server_background_wake(s);
		}
		if (p == last)
			break;
	}
	held = atomic_load(&s->active_bytes) + atomic_load(&s->frozen_bytes);
	if (held > 0 && (uint64_t)held > s->memtable_peak)
		s->memtable_peak = (uint64_t)held;
	s->applied_upto = last->first_seq + last->count - 1;
	/* Counted in the apply turn, which is their only writer: plain
	 * stores, not read-modify-writes.  Release: a reader that sees the
	 * new visible_seq sees the memtable entries it covers. */
	atomic_store_explicit(&s->mutations, atomic_load_explicit(
	    &s->mutations, memory_order_relaxed) + applied,
	    memory_order_relaxed);
	atomic_store_explicit(&s->visible_seq, publish, memory_order_release);
}

/*
 * Lead the group that starts at the head of the queue for self (called
 * with q->mu held, returning without it): self is the head, or the writer
 * that took the lead over from a gathering head.  Then pass the lead to
 * whoever queued after the group.  True when self is done; false when it
 * is to sleep until woken.  The members are woken after q->mu is
 * released; a member's next pointer and bit are read before it is marked
 * done, since a done member may return and its waiter is gone.
 */
static bool
write_lead(struct server *s, struct write_waiter *self)
{
	struct write_queue *q = &s->writes;
	struct write_waiter *first, *last, *p, *follow, *next;
	size_t bytes, n, taken_syncs;
	uint64_t sync_ns;
	uint32_t mask = 0;
	bool sync, self_in;
	int rc;

again:
	first = q->head;
	if (first == self && !write_gather(q, self))
		return true;
	last = first;
	bytes = first->bytes;
	sync = waiter_wants_sync(s, first);
	taken_syncs = sync ? 1 : 0;
	self_in = first == self;
	n = 1;
	for (p = first->next; p != NULL &&
	    bytes + p->bytes <= WRITE_GROUP_BYTES; p = p->next) {
		bytes += p->bytes;
		if (waiter_wants_sync(s, p)) {
			sync = true;
			taken_syncs++;
		}
		self_in |= p == self;
		last = p;
		n++;
	}
	q->queued_syncs -= taken_syncs;
	mutex_unlock(&q->mu);

	mutex_lock(&s->apply_mu);
	rc = group_log(s, first, last, n, sync, &sync_ns);
	group_apply(s, first, last, rc);
	mutex_unlock(&s->apply_mu);

	mutex_lock(&q->mu);
	/* Those just acknowledged may come back, and those queued meanwhile
	 * are waiting: the next synced group expects them all. */
	if (sync)
		q->expected_syncs = taken_syncs + q->queued_syncs;
	/* An average over about the last eight synced groups, which every
	 * writer that queues reads (under q->mu) for its polling. */
	if (sync_ns != 0)
		q->sync_ns = q->sync_ns == 0 ? sync_ns : q->sync_ns -
		    q->sync_ns / 8 + sync_ns / 8;
	next = last->next;
	q->head = next;
	if (next == NULL)
		q->tail = NULL;
	mutex_unlock(&q->mu);

	for (p = first; p != NULL; p = follow) {
		follow = p == last ? NULL : p->next;
		if (p != self)
			mask |= p->bit;
		atomic_store_explicit(&p->done, true, memory_order_release);
	}
	if (next == self) {
		/* The group ended just before self, now the head. */
		waiters_wake(q, mask);
		mask = 0;
		mutex_lock(&q->mu);
		goto again;
	}
	if (next != NULL) {
		atomic_store_explicit(&next->lead, true, memory_order_release);
		mask |= next->bit;
	}
	waiters_wake(q, mask);
	return self_in;
}

/* A rough size of a mutation's log record, for the group limit and the
 * memory check. */
static size_t
mutation_bytes(struct slice row, const struct mutation *ops, size_t count)
{
	size_t n = 32 + row.n;

	for (size_t i = 0; i < count; i++)
		n += 24 + ops[i].family.n + ops[i].qualifier.n +
		    ops[i].value.n;
	return n;
}

/*
 * Log and apply a validated mutation through the write queue; the caller
 * holds the row lock.  See server.h for the order of steps.
 */
static int
mutation_commit(struct server *s, struct server_table *t, struct slice row,
    struct mutation *ops, size_t count, bool sync, int64_t *stamp)
{
	struct write_queue *q = &s->writes;
	struct write_waiter me;
	bool lead;
	int rc;

	if (s->log == NULL)
		return bt_error_set(-EROFS, "store is read-only");
	if ((rc = server_space_refuse(s, ops, count)) < 0 ||
	    (rc = write_throttle(s)) < 0)
		return rc;

	/* Field by field: the detail buffer is written only on failure. */
	me.next = NULL;
	atomic_init(&me.lead, false);
	me.t = t;
	me.tablet = NULL;
	me.row = row;
	me.ops = ops;
	me.count = count;
	me.bytes = mutation_bytes(row, ops, count);
	me.sync = sync;
	me.spin_ns = 0;
	atomic_init(&me.done, false);
	me.rc = 0;
	me.stamp = 0;
	me.first_seq = 0;
	me.record_end = 0;
	me.detail[0] = '\0';
	mutex_lock(&q->mu);
	me.bit = 1u << (q->next_bit++ % 32);
	if (q->tail != NULL)
		q->tail->next = &me;
	else
		q->head = &me;
	q->tail = &me;
	if (waiter_wants_sync(s, &me)) {
		me.spin_ns = 2 * q->sync_ns;
		if (me.spin_ns > WRITE_SPIN_MAX_US * 1000ull)
			me.spin_ns = WRITE_SPIN_MAX_US * 1000ull;
		q->queued_syncs++;
	}
	lead = q->head == &me;
	if (!lead && q->gatherer != NULL &&
	    q->queued_syncs >= q->expected_syncs) {
		/* The count is complete: take the lead over.  The gatherer
		 * sleeps on until its group is done (write_gather()). */
		q->gatherer = NULL;
		lead = true;
	}
	if (!lead)
		mutex_unlock(&q->mu);
	for (;;) {
		if (lead && write_lead(s, &me))
			break;
		waiter_sleep(q, &me, 0);
		if (atomic_load_explicit(&me.done, memory_order_acquire))
			break;
		atomic_store_explicit(&me.lead, false, memory_order_relaxed);
		mutex_lock(&q->mu);	/* woken to lead */
		lead = true;
	}
	if (me.rc < 0)
		return bt_error_set(me.rc, "%s", me.detail);
	if (stamp != NULL)
		*stamp = me.stamp;
	return 0;
}

int
server_mutate(struct server *s, const char *table, uint64_t tablet,
    struct slice row, struct mutation *ops, size_t count, bool sync,
    int64_t *stamp)
{
	struct server_table *t;
	struct tablet_schema *schema;
	struct mutex *lock;
	int rc;

	if ((rc = server_table_lookup_schema(s, table, &t, &schema)) < 0)
		return rc;
	if ((rc = tablet_check_serves(t, tablet, row)) != 0 ||
	    (rc = mutation_validate(s, t, schema, row, ops, count)) < 0)
		goto out;
	lock = row_lock(s, t->id, row);
	mutex_lock(lock);
	rc = mutation_commit(s, t, row, ops, count, sync, stamp);
	mutex_unlock(lock);
out:
	tablet_schema_unref(schema);
	server_table_unref(t);
	return rc;
}

/* Read one row from the tablet serving it now. */
static int
table_read_row(struct server *s, struct server_table *t, struct slice row,
    const struct cells_filter *filter, struct cells_row *out)
{
	/* The snapshot before the map: a tablet that came later by a split
	 * holds everything up to it, a tablet the split replaced too. */
	uint64_t snapshot = atomic_load(&s->visible_seq);
	struct tablet_map *m = server_table_map(t);
	int rc;

	rc = tablet_read_row(server_tablet_map_find(m, row), snapshot, row,
	    server_now(s), filter, out);
	server_tablet_map_unref(m);
	return rc;
}

/* A pooled row for a read-modify-write, or own (initialized) when every
 * slot is taken. */
static struct cells_row *
rmw_row_take(struct server *s, struct cells_row *own)
{
	for (size_t i = 0; i < RMW_ROWS; i++)
		if (!atomic_flag_test_and_set_explicit(&s->rmw_taken[i],
		    memory_order_acquire))
			return &s->rmw_rows[i];
	cells_row_init(own);
	return own;
}

static void
rmw_row_give(struct server *s, struct cells_row *r, struct cells_row *own)
{
	if (r == own) {
		cells_row_release(own);
		return;
	}
	if (cells_row_memory(r) > RMW_ROW_KEEP)
		cells_row_release(r);
	atomic_flag_clear_explicit(&s->rmw_taken[r - s->rmw_rows],
	    memory_order_release);
}

/* The newest visible version of one column, resolved into r: 0 with the
 * value and timestamp in *c (borrowed from r), or BT_NOTFOUND. */
static int
column_newest(struct server *s, struct server_table *t, struct slice row,
    struct slice family, struct slice qualifier, int64_t as_of,
    struct cells_row *r, struct cell *c)
{
	struct cells_column col = { family, true, qualifier };
	struct cells_filter f = { .columns = &col, .column_count = 1,
	    .cells_per_column = 1, .has_max_ts = as_of >= 0, .max_ts = as_of };
	int rc;

	if ((rc = table_read_row(s, t, row, &f, r)) == 0)
		cells_row_get(r, 0, c);
	return rc;
}

/*
 * A read-modify-write on one column: under the row lock, read the newest
 * value (at or before as_of when it is not negative), let decide() build
 * the mutation from it, and commit.  decide
 * returns 0 to commit, 1 to change nothing, or a negative error.  The
 * value decide() sees is borrowed from a pooled row until the commit is
 * done, so that the usual read-modify-write allocates nothing to read.
 */
static int
column_rmw(struct server *s, const char *table, uint64_t tablet,
    struct slice row,
    struct slice family, struct slice qualifier, bool sync,
    int64_t as_of,
    int (*decide)(void *arg, int found, struct slice value, int64_t ts,
    struct mutation **ops, size_t *count), void *arg, int64_t *stamp)
{
	struct server_table *t;
	struct tablet_schema *schema;
	struct mutation probe = { .kind = MUTATION_PUT, .family = family,
	    .qualifier = qualifier, .ts = MUTATION_TS_SERVER };
	struct mutation *ops;
	struct mutex *lock;
	struct cells_row own, *r;
	struct cell c = { .ts = 0 };
	size_t count;
	int rc, found;

	if ((rc = server_table_lookup_schema(s, table, &t, &schema)) < 0)
		return rc;
	if ((rc = tablet_check_serves(t, tablet, row)) != 0 ||
	    (rc = mutation_validate(s, t, schema, row, &probe, 1)) < 0)
		goto out;
	r = rmw_row_take(s, &own);
	lock = row_lock(s, t->id, row);
	mutex_lock(lock);
	found = column_newest(s, t, row, family, qualifier, as_of, r, &c);
	if (found < 0) {
		rc = found;
	} else if ((rc = decide(arg, found == 0, found == 0 ? c.value :
	    slice_make(NULL, 0), c.ts, &ops, &count)) == 0) {
		if ((rc = mutation_validate(s, t, schema, row, ops,
		    count)) == 0)
			rc = mutation_commit(s, t, row, ops, count, sync,
			    stamp);
	} else if (rc == 1) {
		rc = 0;
	}
	mutex_unlock(lock);
	rmw_row_give(s, r, &own);
out:
	tablet_schema_unref(schema);
	server_table_unref(t);
	return rc;
}

/* The ts_floor of a put that must become the newest version of a column
 * whose newest version, if found, has time ts. */
static int64_t
newest_floor(int found, int64_t ts)
{
	if (!found)
		return 0;
	return ts < INT64_MAX ? ts + 1 : ts;
}

struct check_arg {
	struct slice family, qualifier;
	const struct slice *expected;
	int64_t expected_ts;		/* -1: any */
	struct mutation *ops;
	size_t count;
	bool *applied;
};

static int
check_decide(void *arg, int found, struct slice value, int64_t ts,
    struct mutation **ops, size_t *count)
{
	struct check_arg *a = arg;
	bool match = a->expected == NULL ? !found :
	    found && slice_equal(value, *a->expected) &&
	    (a->expected_ts < 0 || ts == a->expected_ts);

	*a->applied = match;
	/* What a check-and-mutate puts in the column it read, with the
	 * server's clock, becomes that column's newest version. */
	for (size_t i = 0; match && i < a->count; i++) {
		struct mutation *m = &a->ops[i];

		if (m->kind == MUTATION_PUT && m->ts == MUTATION_TS_SERVER &&
		    slice_equal(m->family, a->family) &&
		    slice_equal(m->qualifier, a->qualifier))
			m->ts_floor = newest_floor(found, ts);
	}
	*ops = a->ops;
	*count = a->count;
	return match ? 0 : 1;
}

int
server_check_and_mutate(struct server *s, const char *table, uint64_t tablet,
    struct slice row, struct slice family, struct slice qualifier,
    const struct slice *expected, int64_t expected_ts, struct mutation *ops,
    size_t count, bool sync, bool *applied)
{
	struct check_arg a = { family, qualifier, expected, expected_ts, ops,
	    count, applied };

	*applied = false;
	return column_rmw(s, table, tablet, row, family, qualifier, sync, -1,
	    check_decide, &a, NULL);
}

struct increment_arg {
	struct slice family, qualifier;
	int64_t delta;
	int64_t result;
	char text[32];
	struct mutation op;
};

/* Parse an ASCII decimal counter, optionally ending in one newline. */
static int
counter_parse(struct slice v, int64_t *out)
{
	char tmp[32], *end;
	size_t n = v.n;
	long long x;

	if (n > 0 && v.p[n - 1] == '\n')
		n--;
	if (n == 0 || n >= sizeof(tmp))
		return bt_error_set(-EINVAL, "counter value is not an "
		    "integer");
	memcpy(tmp, v.p, n);
	tmp[n] = '\0';
	if (!(tmp[0] == '-' || (tmp[0] >= '0' && tmp[0] <= '9')))
		return bt_error_set(-EINVAL, "counter value is not an "
		    "integer");
	errno = 0;
	x = strtoll(tmp, &end, 10);
	if (*end != '\0')
		return bt_error_set(-EINVAL, "counter value is not an "
		    "integer");
	if (errno == ERANGE)
		return bt_error_set(-ERANGE, "counter value out of range");
	*out = x;
	return 0;
}

/* Write x in ASCII decimal and a newline at out (room for 21 bytes);
 * returns the length.  snprintf() cost more than the rest of the
 * decision. */
static size_t
counter_format(int64_t x, char *out)
{
	uint64_t u = x < 0 ? -(uint64_t)x : (uint64_t)x;
	char digits[20];
	size_t n = 0, len = 0;

	do {
		digits[n++] = (char)('0' + u % 10);
		u /= 10;
	} while (u != 0);
	if (x < 0)
		out[len++] = '-';
	while (n > 0)
		out[len++] = digits[--n];
	out[len++] = '\n';
	return len;
}

static int
increment_decide(void *arg, int found, struct slice value, int64_t ts,
    struct mutation **ops, size_t *count)
{
	struct increment_arg *a = arg;
	int64_t old = 0;
	int rc;

	if (found && (rc = counter_parse(value, &old)) < 0)
		return rc;
	if (__builtin_add_overflow(old, a->delta, &a->result))
		return bt_error_set(-ERANGE, "counter overflow");
	a->op.kind = MUTATION_PUT;
	a->op.family = a->family;
	a->op.qualifier = a->qualifier;
	a->op.ts = MUTATION_TS_SERVER;
	a->op.ts_floor = newest_floor(found, ts);
	a->op.value = slice_make(a->text, counter_format(a->result, a->text));
	*ops = &a->op;
	*count = 1;
	return 0;
}

int
server_increment(struct server *s, const char *table, uint64_t tablet,
    struct slice row,
    struct slice family, struct slice qualifier, int64_t delta, bool sync,
    int64_t *result, int64_t *stamp)
{
	struct increment_arg a = { .family = family, .qualifier = qualifier,
	    .delta = delta };
	int rc;

	rc = column_rmw(s, table, tablet, row, family, qualifier, sync, -1,
	    increment_decide, &a, stamp);
	if (rc == 0 && result != NULL)
		*result = a.result;
	if (rc == 0 && stamp != NULL)
		*stamp = a.op.ts;
	return rc;
}

struct append_arg {
	struct slice family, qualifier, suffix;
	struct buf joined;
	struct mutation op;
};

static int
append_decide(void *arg, int found, struct slice value, int64_t ts,
    struct mutation **ops, size_t *count)
{
	struct append_arg *a = arg;
	int rc;

	if ((rc = buf_set(&a->joined, value.p, found ? value.n : 0)) < 0 ||
	    (rc = buf_append(&a->joined, a->suffix.p, a->suffix.n)) < 0)
		return rc;
	a->op.kind = MUTATION_PUT;
	a->op.family = a->family;
	a->op.qualifier = a->qualifier;
	a->op.ts = MUTATION_TS_SERVER;
	a->op.ts_floor = newest_floor(found, ts);
	a->op.value = buf_slice(&a->joined);
	*ops = &a->op;
	*count = 1;
	return 0;
}

int
server_append(struct server *s, const char *table, uint64_t tablet,
    struct slice row,
    struct slice family, struct slice qualifier, struct slice suffix,
    bool sync, int64_t *stamp)
{
	struct append_arg a = { .family = family, .qualifier = qualifier,
	    .suffix = suffix };
	int rc;

	buf_init(&a.joined);
	rc = column_rmw(s, table, tablet, row, family, qualifier, sync, -1,
	    append_decide, &a, stamp);
	buf_release(&a.joined);
	if (rc == 0 && stamp != NULL)
		*stamp = a.op.ts;
	return rc;
}

struct put_newest_arg {
	struct mutation op;
};

static int
put_newest_decide(void *arg, int found, struct slice value, int64_t ts,
    struct mutation **ops, size_t *count)
{
	struct put_newest_arg *a = arg;

	(void)value;
	a->op.ts_floor = newest_floor(found, ts);
	*ops = &a->op;
	*count = 1;
	return 0;
}

int
server_put_newest(struct server *s, const char *table, uint64_t tablet,
    struct slice row, struct slice family, struct slice qualifier,
    struct slice value, bool sync, int64_t *stamp)
{
	struct put_newest_arg a = { .op = { .kind = MUTATION_PUT,
	    .family = family, .qualifier = qualifier,
	    .ts = MUTATION_TS_SERVER, .value = value } };
	int rc;

	rc = column_rmw(s, table, tablet, row, family, qualifier, sync, -1,
	    put_newest_decide, &a, stamp);
	if (rc == 0 && stamp != NULL)
		*stamp = a.op.ts;
	return rc;
}

/* ---- Reads ---- */

int
server_read_row(struct server *s, struct server_table *t, uint64_t tablet,
    struct slice row, const struct cells_filter *filter,
    struct cells_row *out)
{
	int rc;

	if (row.n == 0 || row.n > SERVER_MAX_ROW) {
		rc = bt_error_set(-EINVAL, "row key of %zu bytes", row.n);
	} else {
		/* As table_read_row(), with one look at the map for the
		 * staleness check and the read. */
		uint64_t snapshot = atomic_load(&s->visible_seq);
		struct tablet_map *m = server_table_map(t);
		struct tablet *tab = server_tablet_map_find(m, row);

		if (tablet != 0 && tablet_id(tab) != tablet)
			rc = BT_STALE;
		else
			rc = tablet_read_row(tab, snapshot, row,
			    server_now(s), filter, out);
		server_tablet_map_unref(m);
	}
	atomic_fetch_add(&s->reads, 1);
	return rc;
}

/* A scan walks the table's tablets in row order, one at a time, from the
 * map current when it opened (its tablets stay readable after a split). */
struct server_scan {
	struct server *s;
	struct server_table *t;
	struct tablet_map *map;
	size_t next_tablet;
	struct tablet_scan *cur;
	uint64_t snapshot;
	int64_t now;
	const struct cells_filter *filter;
	struct buf start;
	bool start_exclusive;
	struct buf end;
};

/* Open the scan of the next tablet that overlaps [start, end). */
static int
scan_next_tablet(struct server_scan *sc)
{
	while (sc->next_tablet < sc->map->count) {
		struct tablet *tab = sc->map->tablets[sc->next_tablet++];
		struct slice first = tablet_start(tab), last = tablet_end(tab);

		if (sc->end.n > 0 && first.n > 0 &&
		    slice_compare(first, buf_slice(&sc->end)) >= 0)
			break;
		if (sc->start.n > 0 && last.n > 0 &&
		    slice_compare(last, buf_slice(&sc->start)) <= 0)
			continue;
		return tablet_scan_open(tab, sc->snapshot,
		    buf_slice(&sc->start), sc->start_exclusive,
		    buf_slice(&sc->end), sc->now, sc->filter, &sc->cur);
	}
	return BT_DONE;
}

int
server_scan_open(struct server *s, const char *table, struct slice start,
    bool start_exclusive, struct slice end, const struct cells_filter *filter,
    struct server_scan **out)
{
	struct server_scan *sc;
	int rc;

	if ((sc = bt_calloc(1, sizeof(*sc))) == NULL)
		return -ENOMEM;
	buf_init(&sc->start);
	buf_init(&sc->end);
	sc->s = s;
	if ((rc = server_table_lookup(s, table, &sc->t)) < 0)
		goto out_free;
	/* The snapshot before the map, as in table_read_row(). */
	sc->snapshot = atomic_load(&s->visible_seq);
	sc->map = server_table_map(sc->t);
	/* Skip the tablets before start. */
	if (start.n > 0)
		sc->next_tablet = server_tablet_map_index(sc->map, start);
	sc->now = server_now(s);
	sc->filter = filter;
	sc->start_exclusive = start_exclusive;
	if ((rc = buf_set(&sc->start, start.p, start.n)) < 0 ||
	    (rc = buf_set(&sc->end, end.p, end.n)) < 0)
		goto out_free;
	*out = sc;
	return 0;
out_free:
	server_scan_close(sc);
	return rc;
}

int
server_scan_next(struct server_scan *sc, struct cells_row *out)
{
	int rc;

	for (;;) {
		if (sc->cur == NULL && (rc = scan_next_tablet(sc)) != 0)
			return rc;
		if ((rc = tablet_scan_next(sc->cur, out)) != BT_DONE)
			return rc;
		tablet_scan_close(sc->cur);
		sc->cur = NULL;
	}
}

void
server_scan_close(struct server_scan *sc)
{
	if (sc == NULL)
		return;
	tablet_scan_close(sc->cur);
	server_tablet_map_unref(sc->map);
	server_table_unref(sc->t);
	buf_release(&sc->start);
	buf_release(&sc->end);
	bt_free(sc);
}


struct move_arg {
	struct slice src_family, src_qualifier;
	int64_t src_ts;
	struct slice dst_family, dst_qualifier;
	int64_t dst_ts;
	struct buf value;
	struct mutation ops[2];
};

static int
move_decide(void *arg, int found, struct slice value, int64_t ts,
    struct mutation **ops, size_t *count)
{
	struct move_arg *a = arg;
	int rc;

	if (!found || ts != a->src_ts)
		return bt_error_set(-ENOENT, "no version %" PRId64 " to move",
		    a->src_ts);
	if (a->dst_ts == a->src_ts &&
	    slice_equal(a->dst_family, a->src_family) &&
	    slice_equal(a->dst_qualifier, a->src_qualifier))
		return 1;	/* onto itself */
	if ((rc = buf_set(&a->value, value.p, value.n)) < 0)
		return rc;
	a->ops[0] = (struct mutation){ .kind = MUTATION_PUT,
	    .family = a->dst_family, .qualifier = a->dst_qualifier,
	    .ts = a->dst_ts, .value = buf_slice(&a->value) };
	a->ops[1] = (struct mutation){ .kind = MUTATION_DELETE_VERSION,
	    .family = a->src_family, .qualifier = a->src_qualifier,
	    .ts = a->src_ts };
	*ops = a->ops;
	*count = 2;
	return 0;
}

int
server_move_version(struct server *s, const char *table, uint64_t tablet,
    struct slice row,
    struct slice src_family, struct slice src_qualifier, int64_t src_ts,
    struct slice dst_family, struct slice dst_qualifier, int64_t dst_ts,
    bool sync, int64_t *stamp)
{
	struct move_arg a = { .src_family = src_family,
	    .src_qualifier = src_qualifier, .src_ts = src_ts,
	    .dst_family = dst_family, .dst_qualifier = dst_qualifier,
	    .dst_ts = dst_ts };
	int rc;

	if (src_ts < 0)
		return bt_error_set(-EINVAL, "timestamp %" PRId64
		    " out of range", src_ts);
	buf_init(&a.value);
	rc = column_rmw(s, table, tablet, row, src_family, src_qualifier, sync,
	    src_ts, move_decide, &a, stamp);
	buf_release(&a.value);
	return rc;
}

/* Every version of one column, or of a whole family when col has no
 * qualifier, that a read sees now, into r (values too unless keys_only):
 * 0 with r->count cells (none when there are none), or an error. */
static int
column_versions(struct server *s, struct server_table *t, struct slice row,
    const struct cells_column *col, bool keys_only, struct cells_row *r)
{
	struct cells_filter f = { .columns = col, .column_count = 1,
	    .keys_only = keys_only };
	int rc;

	if ((rc = table_read_row(s, t, row, &f, r)) == BT_NOTFOUND) {
		r->count = 0;
		rc = 0;
	}
	return rc;
}

/*
 * Under the row lock: the mutation that moves src's versions (read into
 * r) to dst: a delete of src, then a put of each at dst with its time and
 * value, in *opsp (allocated; *countp of them), or an error.  The delete
 * comes first, so that it masks none of the puts (src and dst differ).
 */
static int
move_build(struct server *s, struct server_table *t, struct slice row,
    const struct cells_column *src, const struct cells_column *dst,
    struct cells_row *r, struct mutation **opsp, size_t *countp)
{
	struct mutation *ops;
	struct cell c;
	uint64_t bytes = 32 + row.n, values = 0;
	size_t n;
	int rc;

	if ((rc = column_versions(s, t, row, dst, true, r)) < 0)
		return rc;
	if (r->count > 0)
		return bt_error_set(-ENOTEMPTY, "the destination holds "
		    "versions");
	if ((rc = column_versions(s, t, row, src, true, r)) < 0)
		return rc;
	if ((n = r->count) == 0)
		return bt_error_set(-ENOENT, "no version to move");
	for (size_t i = 0; i < n; i++) {
		cells_row_get(r, i, &c);
		values += c.value_size;
		bytes += 24 + dst->family.n + (dst->has_qualifier ?
		    dst->qualifier.n : c.qualifier.n) + c.value_size;
	}
	if (values > s->opts.max_cell)
		return bt_error_set(-EFBIG, "%zu versions of %" PRIu64
		    " bytes in all are more than one write may carry "
		    "(max_cell, %" PRIu64 ")", n, values, s->opts.max_cell);
	if (bytes > LOG_MAX_RECORD)
		return bt_error_set(-EFBIG, "%zu versions are more than one "
		    "commit log record holds (%u bytes)", n, LOG_MAX_RECORD);
	if ((rc = column_versions(s, t, row, src, false, r)) < 0)
		return rc;
	n = r->count;	/* the row lock keeps it as it was */
	if ((ops = bt_calloc(n + 1, sizeof(*ops))) == NULL)
		return -ENOMEM;
	ops[0].kind = src->has_qualifier ? MUTATION_DELETE_COLUMN :
	    MUTATION_DELETE_FAMILY;
	ops[0].family = src->family;
	ops[0].qualifier = src->qualifier;
	for (size_t i = 0; i < n; i++) {
		cells_row_get(r, i, &c);
		ops[i + 1].kind = MUTATION_PUT;
		ops[i + 1].family = dst->family;
		ops[i + 1].qualifier = dst->has_qualifier ? dst->qualifier :
		    c.qualifier;
		ops[i + 1].ts = c.ts;
		ops[i + 1].value = c.value;
	}
	*opsp = ops;
	*countp = n + 1;
	return 0;
}

int
server_move_column(struct server *s, const char *table, uint64_t tablet,
    struct slice row, const struct cells_column *src,
    const struct cells_column *dst, bool sync)
{
	struct mutation probe[2] = {
		{ .kind = MUTATION_PUT, .family = src->family,
		    .qualifier = src->qualifier, .ts = MUTATION_TS_SERVER },
		{ .kind = MUTATION_PUT, .family = dst->family,
		    .qualifier = dst->qualifier, .ts = MUTATION_TS_SERVER },
	};
	struct server_table *t;
	struct tablet_schema *schema;
	struct mutation *ops = NULL;
	struct cells_row r;
	struct mutex *lock;
	size_t count = 0;
	int rc;

	if (src->has_qualifier != dst->has_qualifier)
		return bt_error_set(-EINVAL, "a column moves to a column and "
		    "a family to a family");
	if ((rc = server_table_lookup_schema(s, table, &t, &schema)) < 0)
		return rc;
	if ((rc = tablet_check_serves(t, tablet, row)) != 0 ||
	    (rc = mutation_validate(s, t, schema, row, probe, 2)) < 0)
		goto out;
	cells_row_init(&r);
	lock = row_lock(s, t->id, row);
	mutex_lock(lock);
	if (slice_equal(src->family, dst->family) &&
	    (!src->has_qualifier || slice_equal(src->qualifier,
	    dst->qualifier))) {
		/* Onto itself: nothing changes, if there is something. */
		if ((rc = column_versions(s, t, row, src, true, &r)) == 0 &&
		    r.count == 0)
			rc = bt_error_set(-ENOENT, "no version to move");
	} else if ((rc = move_build(s, t, row, src, dst, &r, &ops,
	    &count)) == 0 &&
	    (rc = mutation_validate(s, t, schema, row, ops, count)) == 0) {
		rc = mutation_commit(s, t, row, ops, count, sync, NULL);
	}
	mutex_unlock(lock);
	bt_free(ops);
	cells_row_release(&r);
out:
	tablet_schema_unref(schema);
	server_table_unref(t);
	return rc;
}
