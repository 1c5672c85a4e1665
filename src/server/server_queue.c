/*
 * server_queue.c - the write queue: group commit of mutations, each
 * group logged with one append (and at most one sync), applied and
 * published in sequence order by its leader (docs/design.md section 7,
 * W1 and W2).
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "server/server_int.h"
#include "util/alloc.h"
#include "util/error.h"

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
 * deadline inside the group's sync would wake it there for nothing, and
 * that wake-up takes a processor from the group it is waiting for
 * (bench/figures.md).
 */
#define WRITE_GROUP_BYTES	(1u << 20)
/* What a write that a broken store refuses is told. */
#define BROKEN_DETAIL	"an earlier failure left the store's memory " \
	"behind its log or catalog; reopen the store"
#define WRITE_GATHER_MAX_US	2000

/* One mutation in the write queue; lives on its caller's stack (or in
 * the array of a batch).  The leader fills in the results and then
 * stores done (release), which orders them before the waiter reads
 * them; it then wakes the waiter without touching it again, since a
 * done waiter may return at once.
 *
 * A unit is what one caller queued: one waiter, or the rows of one
 * batch (server_queue_commit_rows()), queued together, which a group
 * takes whole so that the batch is logged with one append.  Only a
 * unit's first waiter has unit_end set, leads, and is waited on: the
 * unit is done when its unit_end is (members are marked in order). */
struct write_waiter {
	struct write_waiter *next;
	struct write_waiter *unit_end;	/* first of a unit: its last */
	size_t unit_count;		/* first of a unit: its waiters */
	size_t unit_bytes;		/* first of a unit: their bytes */
	uint32_t bit;		/* its bit in q->wakes' futex bitsets */
	_Atomic bool lead;	/* stored (release) when it is to lead */
	struct server_table *t;
	struct tablet *tablet;	/* the leader's: where it is reserved */
	struct slice row;
	struct mutation *ops;
	size_t count;
	size_t bytes;		/* an estimate of its log record */
	bool sync;
	_Atomic bool done;	/* stored (release) after the results */
	int rc;
	int64_t stamp;
	uint64_t first_seq;
	size_t record_end;	/* in the leader's buffer */
	size_t gap_end;		/* in the leader's gaps */
	char *detail;		/* the leader's detail, when rc < 0: */
};
#define WAITER_DETAIL_SIZE	256	/* bytes at detail */

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
	bt_free(q->gaps);
	bt_free(q->slices);
	bt_free(q->log_records);
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
	snprintf(p->detail, WAITER_DETAIL_SIZE, "%s", bt_error_detail());
}

static bool
waiter_ready(const struct write_waiter *p)
{
	assert(p->unit_end != NULL);	/* a unit's first */
	return atomic_load_explicit(&p->unit_end->done,
	    memory_order_acquire) ||
	    atomic_load_explicit(&p->lead, memory_order_acquire);
}

/*
 * Sleep until p is done or is to lead, or until the monotonic deadline
 * (in nanoseconds; 0: none) passes: true when woken for one of the two,
 * false at the deadline.  Every waiter sleeps on the one futex word
 * q->wakes, each with a bit of its own, so that a leader wakes its whole
 * group with one FUTEX_WAKE_BITSET: one system call, where a wake per
 * member cost a system call and an inter-processor interrupt each.
 *
 * A waiter does not poll before it sleeps.  Polling (yielding the
 * processor between looks, as RocksDB's adaptive yield does) takes the
 * futex wake-up off the path from one sync to the next, but while the
 * sync is in flight it takes the processors that the sync's completion,
 * the leader's apply and the returning writers need: on a machine with
 * fewer processors than writers each sync of the log then took longer
 * than a lone writer's, and polling was most of the writers' processor
 * time (bench/figures.md).
 */
static bool
waiter_sleep(struct write_queue *q, struct write_waiter *p,
    uint64_t deadline_ns)
{
	struct timespec deadline = {
		.tv_sec = (time_t)(deadline_ns / 1000000000u),
		.tv_nsec = (long)(deadline_ns % 1000000000u),
	};

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

	mutex_assert_held(&q->mu);
	assert(q->head == me);
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

/* Room in the leader's scratch for n records of ops operations. */
static int
write_queue_reserve(struct write_queue *q, size_t n, size_t ops)
{
	struct mutation_gap *gaps;
	struct slice *sl;
	struct log_record *lr;
	struct log_position *pos;

	if (ops > (SIZE_MAX - n) / 2 ||
	    n + 2 * ops > SIZE_MAX / sizeof(*sl))
		return -ENOMEM;
	if (ops > q->gap_slots) {
		if ((gaps = bt_realloc(q->gaps, ops * sizeof(*gaps))) == NULL)
			return -ENOMEM;
		q->gaps = gaps;
		q->gap_slots = ops;
	}
	if (n + 2 * ops > q->part_slots) {
		if ((sl = bt_realloc(q->slices, (n + 2 * ops) *
		    sizeof(*sl))) == NULL)
			return -ENOMEM;
		q->slices = sl;
		q->part_slots = n + 2 * ops;
	}
	if (n <= q->slots)
		return 0;
	if ((lr = bt_realloc(q->log_records, n * sizeof(*lr))) == NULL)
		return -ENOMEM;
	q->log_records = lr;
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
		/* A tablet not served (a write that named no tablet, or
		 * came as its tablet was unloaded) fails the group with
		 * BT_ENOTSERVING: nothing is logged, so a retry is safe. */
		if ((rc = tablet_reserve(tablet, p->row, p->ops,
		    p->count)) == BT_ENOTSERVING)
			return rc;
		if (rc < 0)
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
int64_t
server_stamp_next_locked(struct server *s)
{
	int64_t last = atomic_load(&s->last_stamp), now;

	mutex_assert_held(&s->apply_mu);
	do {
		now = server_now(s);
		if (now <= last)
			now = last + 1;
	} while (!atomic_compare_exchange_weak(&s->last_stamp, &last, now));
	return now;
}

void
server_stamp_raise(struct server *s, int64_t stamp)
{
	int64_t last = atomic_load(&s->last_stamp);

	while (stamp > last &&
	    !atomic_compare_exchange_weak(&s->last_stamp, &last, stamp))
		;
}

int
server_stamp_observe(struct server *s, int64_t stamp, int64_t *last)
{
	int64_t now;

	/* Every write reply reads the last stamp (stamp 0): no clock read
	 * for a stamp that raises nothing. */
	if (stamp <= atomic_load(&s->last_stamp)) {
		if (last != NULL)
			*last = atomic_load(&s->last_stamp);
		return 0;
	}
	now = server_now(s);
	if (stamp > now && stamp - now > SERVER_STAMP_AHEAD_US)
		return bt_error_set(-ERANGE, "stamp %" PRId64 " is %" PRId64
		    " s ahead of this server's clock: the cell's clocks "
		    "differ by more than an hour", stamp,
		    (stamp - now) / 1000000);
	server_stamp_raise(s, stamp);
	if (last != NULL)
		*last = atomic_load(&s->last_stamp);
	return 0;
}

static int
group_log(struct server *s, struct write_waiter *first,
    struct write_waiter *last, size_t n, bool sync, uint64_t *sync_ns)
{
	struct write_queue *q = &s->writes;
	struct write_waiter *p;
	size_t i = 0, from = 0, ops = 0, g = 0, k;
	uint64_t t0, seq;
	int rc;

	mutex_assert_held(&s->apply_mu);
	*sync_ns = 0;
	/* The leader alone writes next_seq and last_stamp: no lock.  Every
	 * group before this one was applied, or failed, whole (W2). */
	seq = atomic_load_explicit(&s->next_seq, memory_order_relaxed);
	assert(seq == s->applied_upto + 1);
	for (p = first;; p = p->next) {
		p->stamp = server_stamp_next_locked(s);
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

	for (p = first;; p = p->next) {
		ops += p->count;
		if (p == last)
			break;
	}
	if ((rc = write_queue_reserve(q, n, ops)) < 0)
		return bt_error_set(rc, "no memory for a write group of %zu",
		    n);
	/* Encode every record into one buffer, leaving large values out
	 * (the log writes them from the callers' memory: one copy fewer);
	 * the parts point into the buffer once it stops moving. */
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
		if ((rc = mutation_record_encode_split(p->first_seq, p->t->id,
		    p->stamp, p->row, p->ops, p->count, LOG_PART_IN_PLACE,
		    &q->records, q->gaps + g, &k)) < 0)
			return bt_error_set(rc, "encoding a log record: %s",
			    bt_strerror(rc));
		p->record_end = q->records.n;
		p->gap_end = g += k;
		if (p == last)
			break;
	}
	for (p = first, g = k = 0;; p = p->next) {
		struct slice *parts = q->slices + k;

		for (; g < p->gap_end; g++) {
			q->slices[k++] = slice_make(q->records.p + from,
			    q->gaps[g].at - from);
			q->slices[k++] = q->gaps[g].value;
			from = q->gaps[g].at;
		}
		q->slices[k++] = slice_make(q->records.p + from,
		    p->record_end - from);
		q->log_records[i].parts = parts;
		q->log_records[i++].count = (size_t)(q->slices + k - parts);
		from = p->record_end;
		if (p == last)
			break;
	}
	assert(i == n);		/* n members, first to last */
	t0 = sync ? monotonic_ns() : 0;	/* a clock read costs */
	rc = log_writer_append_records(s->log, q->log_records, n, sync,
	    q->positions);
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
	uint64_t seq_end = 0;
	int64_t held;
	int arc;

	mutex_assert_held(&s->apply_mu);
	if (s->broken < 0)
		publish = atomic_load_explicit(&s->visible_seq,
		    memory_order_relaxed);
	for (p = first;; p = p->next) {
		/* In sequence order, one record per member (W2). */
		assert(p == first || p->first_seq == seq_end + 1);
		seq_end = p->first_seq + p->count - 1;
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
				tablet_request_note(p->tablet, p->row);
			}
			assert(i < s->writes.slots);
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
	/* What readers see only grows. */
	assert(publish >= atomic_load_explicit(&s->visible_seq,
	    memory_order_relaxed));
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
	mutex_assert_held(&q->mu);
	first = q->head;
	assert(first != NULL);
	if (first == self && !write_gather(q, self))
		return true;
	/* Whole units only: a batch is logged with one append. */
	assert(first->unit_end != NULL);
	last = first->unit_end;
	bytes = first->unit_bytes;
	sync = waiter_wants_sync(s, first);
	taken_syncs = sync ? 1 : 0;
	self_in = first == self;
	n = first->unit_count;
	for (p = last->next; p != NULL &&
	    bytes + p->unit_bytes <= WRITE_GROUP_BYTES;
	    p = p->unit_end->next) {
		assert(p->unit_end != NULL);
		bytes += p->unit_bytes;
		if (waiter_wants_sync(s, p)) {
			sync = true;
			taken_syncs++;
		}
		self_in |= p == self;
		last = p->unit_end;
		n += p->unit_count;
	}
	assert(q->queued_syncs >= taken_syncs);
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
	/* An average over about the last eight synced groups, which a
	 * gathering leader reads (under q->mu) for its wait. */
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
		if (p != self && p->unit_end != NULL)
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
		/* Its bit first: once it leads, it may return and its entry
		 * (on its stack) be gone. */
		mask |= next->bit;
		atomic_store_explicit(&next->lead, true, memory_order_release);
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

/* A waiter for one row's mutation, not yet queued. */
static void
waiter_init(struct write_waiter *p, struct server_table *t, struct slice row,
    struct mutation *ops, size_t count, bool sync, char *detail)
{
	/* Field by field: the detail buffer is written only on failure. */
	p->next = NULL;
	p->unit_end = NULL;
	p->unit_count = 0;
	p->unit_bytes = 0;
	atomic_init(&p->lead, false);
	p->t = t;
	p->tablet = NULL;
	p->row = row;
	p->ops = ops;
	p->count = count;
	p->bytes = mutation_bytes(row, ops, count);
	p->sync = sync;
	atomic_init(&p->done, false);
	p->rc = 0;
	p->stamp = 0;
	p->first_seq = 0;
	p->record_end = 0;
	p->gap_end = 0;
	p->detail = detail;
	detail[0] = '\0';
}

/*
 * Queue the unit ws[0..n) (linked in order, one futex bit for all) and
 * wait until it is done, leading when its turn comes.  ws[0] is the one
 * the lead is passed to and that the caller's thread waits on.
 */
static void
unit_commit(struct server *s, struct write_waiter *ws, size_t n)
{
	struct write_queue *q = &s->writes;
	struct write_waiter *me = &ws[0];
	bool lead;

	assert(n > 0);
	me->unit_end = &ws[n - 1];
	me->unit_count = n;
	for (size_t i = 0; i < n; i++) {
		me->unit_bytes += ws[i].bytes;
		if (i + 1 < n)
			ws[i].next = &ws[i + 1];
	}
	mutex_lock(&q->mu);
	me->bit = 1u << (q->next_bit++ % 32);
	for (size_t i = 1; i < n; i++)
		ws[i].bit = me->bit;
	if (q->tail != NULL)
		q->tail->next = me;
	else
		q->head = me;
	q->tail = me->unit_end;
	if (waiter_wants_sync(s, me))
		q->queued_syncs++;
	lead = q->head == me;
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
		if (lead && write_lead(s, me))
			break;
		waiter_sleep(q, me, 0);
		if (atomic_load_explicit(&me->unit_end->done,
		    memory_order_acquire))
			break;
		atomic_store_explicit(&me->lead, false, memory_order_relaxed);
		mutex_lock(&q->mu);	/* woken to lead */
		lead = true;
	}
	/* Done, and out of the queue. */
	assert(atomic_load_explicit(&me->unit_end->done,
	    memory_order_relaxed));
}

int
server_queue_commit(struct server *s, struct server_table *t,
    struct slice row, struct mutation *ops, size_t count, bool sync,
    int64_t *stamp)
{
	struct write_waiter me;
	char detail[WAITER_DETAIL_SIZE];

	assert(s->log != NULL && count > 0);
	waiter_init(&me, t, row, ops, count, sync, detail);
	unit_commit(s, &me, 1);
	/* me is on this stack. */
	if (me.rc < 0)
		return bt_error_set(me.rc, "%s", me.detail);
	if (stamp != NULL)
		*stamp = me.stamp;
	return 0;
}

int
server_queue_commit_rows(struct server *s, struct server_row_mutation *rows,
    size_t n, bool sync, int *results)
{
	struct write_waiter *ws;
	char detail[WAITER_DETAIL_SIZE];
	size_t k = 0;
	int rc = 0;

	assert(s->log != NULL);
	for (size_t i = 0; i < n; i++)
		k += results[i] == 0;
	if (k == 0)
		return 0;
	if ((ws = bt_calloc(k, sizeof(*ws))) == NULL) {
		rc = bt_error_set(-ENOMEM, "no memory to queue a batch of "
		    "%zu rows", k);
		for (size_t i = 0; i < n; i++)
			if (results[i] == 0)
				results[i] = rc;
		return rc;
	}
	k = 0;
	for (size_t i = 0; i < n; i++)
		if (results[i] == 0) {
			assert(rows[i].count > 0);
			waiter_init(&ws[k++], rows[i].t, rows[i].row,
			    rows[i].ops, rows[i].count, sync, detail);
		}
	unit_commit(s, ws, k);
	k = 0;
	for (size_t i = 0; i < n; i++)
		if (results[i] == 0) {
			struct write_waiter *p = &ws[k++];

			results[i] = p->rc;
			rows[i].stamp = p->stamp;
			if (p->rc < 0 && rc == 0)
				rc = p->rc;
		}
	bt_free(ws);
	if (rc < 0)
		return bt_error_set(rc, "%s", detail);
	return 0;
}
