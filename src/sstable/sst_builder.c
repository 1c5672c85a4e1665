/*
 * sst_builder.c - writing an SSTable (layout in format.h).
 *
 * Entries go into a data block until its size estimate reaches the block
 * size; the block is then compressed (kept only when that saves 12.5 %),
 * written with its trailer, and indexed by its last key.  The Bloom filter
 * is built at the end from the hashes of every distinct consecutive filter
 * prefix, so memory grows by 8 bytes per entry at most.  What is written
 * goes out in appends of SST_WRITE_BUFFER_SIZE, not two per block: at
 * small block sizes a system call per block and trailer is a large
 * share of a flush's CPU.  Every
 * SST_WRITEBACK_SIZE appended, the disk is asked to start writing them
 * (env_file_start_writeback), so that the sync at the end waits for the
 * last stretch only, not for the whole file.
 *
 * With opts.parallel, a full data block is handed to a worker thread that
 * compresses and checksums it (sst_block_seal, the same function as the
 * serial path, so the bytes are the same) while this thread goes on
 * filling the next; this thread then writes the sealed blocks in their
 * order and indexes them, so everything but the compression happens as
 * in the serial builder.  The blocks in flight live in a ring of N
 * slots (slot_count): the builder fills slot submitted % N, block
 * claimed is the next to be sealed, by the worker or, when the ring is
 * full or the table finishing, by the builder itself (so that a worker
 * the scheduler left waiting does not stall the compaction), and the
 * builder writes slot written % N once it is sealed: written <= claimed
 * <= submitted <= written + N.  The counters and the slots' sealed flags
 * are under the worker's mutex; a slot's contents belong to whoever
 * claimed it until it is sealed, to the builder otherwise.
 */
#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "sstable/block.h"
#include "sstable/format.h"
#include "sstable/sstable.h"
#include "util/alloc.h"
#include "util/bloom.h"
#include "util/coding.h"
#include "util/compress.h"
#include "util/crc32c.h"
#include "util/error.h"
#include "util/mutex.h"

/* An entry (key + value) may take at most this much: blocks stay < 4 GiB. */
#define SST_MAX_ENTRY_SIZE	(1ull << 30)
#define SST_MAX_BLOCK_SIZE	(1ull << 30)
#define SST_MAX_BLOOM_BITS	30
/* Bytes gathered before one append to the file. */
#define SST_WRITE_BUFFER_SIZE	(64u << 10)
/* Bytes appended between two writeback hints. */
#define SST_WRITEBACK_SIZE	(1u << 20)

/*
 * The ring of a parallel builder holds SST_PARALLEL_BYTES of blocks, but
 * never fewer than 4 or more than SST_PARALLEL_BLOCKS.  Half of it is
 * queued before the sleeping worker is woken: a wake-up is a system call
 * and a context switch, which cost more than sealing a small block, so
 * each covers a batch.
 */
#define SST_PARALLEL_BYTES	(256u << 10)
#define SST_PARALLEL_MIN_BLOCKS	4

/* One data block in flight: its contents, sealed, and its index key. */
struct sst_slot {
	struct buf raw;			/* the block as built */
	struct buf compressed;		/* Snappy output, when kept */
	struct buf last_key;		/* the block's last key */
	uint64_t lone_value;		/* sst_builder_lone_value() */
	struct slice stored;		/* raw or compressed */
	uint8_t trailer[SST_BLOCK_TRAILER_SIZE];
	int rc;				/* the sealing's result */
	bool sealed;			/* under the worker's mu */
};

/* The compression worker of a parallel builder. */
struct sst_worker {
	pthread_t thread;
	struct mutex mu;
	pthread_cond_t queued;		/* blocks submitted, or stop */
	pthread_cond_t sealed;		/* a block sealed */
	bool compress;
	uint64_t slot_count;		/* of slots, the ring's size */
	/* Under mu.  Block numbers, each a count of blocks so far:
	 * written <= claimed <= submitted <= written + slot_count. */
	uint64_t submitted, claimed;
	bool stop;
	bool worker_waits, builder_waits;
	/* The builder's own. */
	uint64_t written;
	struct sst_slot slots[SST_PARALLEL_BLOCKS];
};

struct sst_builder {
	struct env_file *file;
	struct sst_worker *worker;	/* NULL: serial (so far) */
	struct sst_options opts;
	struct block_builder data_block;
	struct block_builder index_block;
	struct buf last_key;
	uint64_t last_value_n;		/* last_key's value's length */
	struct buf compressed;		/* scratch for Snappy output */
	struct buf hashes;		/* uint64_t Bloom hashes */
	struct buf last_prefix;		/* the filter prefix hashed last */
	struct buf pending;		/* written, not yet appended */
	/* The bounds (opts.key_column): distinct columns, each as varint32
	 * length and bytes (the block's own layout), their count, the last
	 * one met (at its offset in columns), the largest time. */
	struct buf columns;
	size_t column_count;
	size_t last_column_off, last_column_n;
	uint64_t max_time;
	bool bounds_lost;		/* a key the bounds cannot describe */
	/* The sequence range (opts.key_sequence): smallest and largest. */
	uint64_t min_seq, max_seq;
	bool seqs_lost;			/* a key without a sequence number */
	/* The usage (opts.key_label, format.h): each label's figures, its
	 * bytes at off in label_bytes; the one met last; lost when there are
	 * more than SST_USAGE_MAX_LABELS. */
	struct sst_label {
		size_t off, n;
		uint64_t entries, key_bytes, value_bytes;
	} *labels;
	size_t label_count, last_label;
	struct buf label_bytes;
	bool usage_lost;
	/* The splits map (format.h), with opts.filter_prefix: bit i set when
	 * block i + 1 starts with the filter key that block i ends with. */
	struct buf splits;
	uint64_t offset;		/* bytes written (pending too) */
	uint64_t appended;		/* bytes appended to the file */
	uint64_t written_back;		/* appended, hinted for writeback */
	uint64_t entry_count;
	uint64_t block_count;
	int status;			/* < 0: failed, only free remains */
};

void
sst_options_default(struct sst_options *opts)
{
	memset(opts, 0, sizeof(*opts));
	opts->block_size = SST_DEFAULT_BLOCK_SIZE;
	opts->compress = true;
	opts->bloom_bits_per_key = SST_DEFAULT_BLOOM_BITS;
	opts->filter_prefix = NULL;
}

int
sst_builder_new(struct env *env, const char *path,
    const struct sst_options *opts, struct sst_builder **out)
{
	struct sst_builder *b;
	int rc;

	if (opts->bloom_bits_per_key < 0)
		return bt_error_set(-EINVAL, "%s: negative bloom_bits_per_key",
		    path);
	if ((b = bt_calloc(1, sizeof(*b))) == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	b->opts = *opts;
	if (b->opts.block_size == 0)
		b->opts.block_size = SST_DEFAULT_BLOCK_SIZE;
	if (b->opts.block_size > SST_MAX_BLOCK_SIZE)
		b->opts.block_size = SST_MAX_BLOCK_SIZE;
	if (b->opts.bloom_bits_per_key > SST_MAX_BLOOM_BITS)
		b->opts.bloom_bits_per_key = SST_MAX_BLOOM_BITS;
	block_builder_init(&b->data_block, SST_RESTART_INTERVAL);
	block_builder_init(&b->index_block, 1);
	buf_init(&b->last_key);
	buf_init(&b->compressed);
	buf_init(&b->hashes);
	buf_init(&b->last_prefix);
	buf_init(&b->pending);
	buf_init(&b->columns);
	buf_init(&b->splits);
	buf_init(&b->label_bytes);
	if ((rc = env_file_open(env, path, ENV_CREATE, &b->file)) < 0)
		goto out_free;
	*out = b;
	return 0;
out_free:
	sst_builder_free(b);
out:
	return rc;
}

/*
 * Append n bytes to the file, and start the writeback of what was
 * appended since the last hint once that reaches SST_WRITEBACK_SIZE.
 */
static int
sst_builder_append(struct sst_builder *b, const void *p, size_t n)
{
	int rc;

	if ((rc = env_file_append(b->file, p, n)) < 0)
		return rc;
	b->appended += n;
	if (b->appended - b->written_back < SST_WRITEBACK_SIZE)
		return 0;
	rc = env_file_start_writeback(b->file, b->written_back,
	    b->appended - b->written_back);
	b->written_back = b->appended;
	return rc;
}

/* Append what is pending to the file. */
static int
sst_builder_drain(struct sst_builder *b)
{
	int rc;

	if (b->pending.n == 0)
		return 0;
	rc = sst_builder_append(b, b->pending.p, b->pending.n);
	buf_clear(&b->pending);
	return rc;
}

/*
 * Write n bytes after what is written: into the pending buffer, which is
 * appended to the file once it holds SST_WRITE_BUFFER_SIZE.  A large
 * piece with nothing pending goes to the file without a copy.
 */
static int
sst_builder_write(struct sst_builder *b, const void *p, size_t n)
{
	int rc;

	if (b->pending.n == 0 && n >= SST_WRITE_BUFFER_SIZE)
		return sst_builder_append(b, p, n);
	if ((rc = buf_append(&b->pending, p, n)) < 0)
		return rc;
	if (b->pending.n >= SST_WRITE_BUFFER_SIZE)
		return sst_builder_drain(b);
	return 0;
}

/*
 * What a block is stored as: contents Snappy-compressed into *compressed
 * when compress and that saves 12.5 %, else contents as they are; *stored
 * borrows one or the other, and trailer gets the type and checksum.  No
 * state but the arguments: the worker thread calls it too.  0 or a
 * negative error.
 */
static int
sst_block_seal(struct slice contents, bool compress, struct buf *compressed,
    struct slice *stored, uint8_t trailer[SST_BLOCK_TRAILER_SIZE])
{
	uint8_t type = SST_BLOCK_RAW;
	uint32_t crc;
	int rc;

	*stored = contents;
	if (compress) {
		if ((rc = compress_snappy(contents, compressed)) < 0)
			return rc;
		if (compressed->n < contents.n -
		    (contents.n >> SST_MIN_COMPRESSION_SAVING_SHIFT)) {
			*stored = buf_slice(compressed);
			type = SST_BLOCK_SNAPPY;
		}
	}
	trailer[0] = type;
	crc = crc32c_extend(crc32c_value(stored->p, stored->n), &type, 1);
	put_fixed32(trailer + 1, crc32c_mask(crc));
	return 0;
}

/*
 * Append a sealed block's stored bytes and its trailer.  The handle
 * (offset, size) of what was written goes to *offset and *size.
 */
static int
sst_builder_write_sealed(struct sst_builder *b, struct slice stored,
    const uint8_t trailer[SST_BLOCK_TRAILER_SIZE], uint64_t *offset,
    uint64_t *size)
{
	int rc;

	if ((rc = sst_builder_write(b, stored.p, stored.n)) < 0)
		return rc;
	if ((rc = sst_builder_write(b, trailer, SST_BLOCK_TRAILER_SIZE)) < 0)
		return rc;
	*offset = b->offset;
	*size = stored.n;
	b->offset += stored.n + SST_BLOCK_TRAILER_SIZE;
	return 0;
}

/* Seal a block in this thread and append it (sst_builder_write_sealed). */
static int
sst_builder_write_block(struct sst_builder *b, struct slice contents,
    bool may_compress, uint64_t *offset, uint64_t *size)
{
	uint8_t trailer[SST_BLOCK_TRAILER_SIZE];
	struct slice stored;
	int rc;

	if ((rc = sst_block_seal(contents, may_compress && b->opts.compress,
	    &b->compressed, &stored, trailer)) < 0)
		return rc;
	return sst_builder_write_sealed(b, stored, trailer, offset, size);
}

/* Whether the table gets a splits map and lone value lengths: a version
 * 5 table (4 before the usage). */
static bool
sst_builder_has_splits(const struct sst_builder *b)
{
	return b->opts.key_column != NULL && b->opts.filter_prefix != NULL;
}

/* Whether the table's bounds block gets the usage (format.h): a
 * version 5 table built with key_label. */
static bool
sst_builder_has_usage(const struct sst_builder *b)
{
	return sst_builder_has_splits(b) && b->opts.key_label != NULL &&
	    !b->usage_lost;
}

/* Label l's bytes; an empty label may have no buffer behind it yet. */
static struct slice
sst_builder_label(const struct sst_builder *b, const struct sst_label *l)
{
	if (l->n == 0)
		return slice_make("", 0);
	return slice_make(b->label_bytes.p + l->off, l->n);
}

/*
 * Count key and value under key's label.  Keys come sorted, so a label
 * usually repeats the last one; the others are searched in the (short)
 * list.
 */
static int
sst_builder_add_usage(struct sst_builder *b, struct slice key,
    struct slice value)
{
	struct slice label = b->opts.key_label(key);
	struct sst_label *l = NULL;
	int rc;

	if (b->label_count > 0) {
		l = &b->labels[b->last_label];
		if (!slice_equal(label, sst_builder_label(b, l)))
			l = NULL;
	}
	for (size_t i = 0; l == NULL && i < b->label_count; i++)
		if (slice_equal(label, sst_builder_label(b, &b->labels[i]))) {
			l = &b->labels[i];
			b->last_label = i;
		}
	if (l == NULL) {
		if (b->label_count == SST_USAGE_MAX_LABELS ||
		    label.n > UINT32_MAX) {
			b->usage_lost = true;
			return 0;
		}
		if (b->labels == NULL && (b->labels = bt_calloc(
		    SST_USAGE_MAX_LABELS, sizeof(*b->labels))) == NULL)
			return -ENOMEM;
		if ((rc = buf_append(&b->label_bytes, label.p, label.n)) < 0)
			return rc;
		b->last_label = b->label_count++;
		l = &b->labels[b->last_label];
		l->off = b->label_bytes.n - label.n;
		l->n = label.n;
	}
	l->entries++;
	l->key_bytes += key.n;
	l->value_bytes += value.n;
	return 0;
}

/* The usage's part of the bounds block (format.h) into out. */
static int
sst_builder_usage_append(const struct sst_builder *b, struct buf *out)
{
	uint8_t head[VARINT32_MAX_BYTES + 3 * VARINT64_MAX_BYTES], *p;
	int rc;

	p = encode_varint32(head, (uint32_t)b->label_count);
	if ((rc = buf_append(out, head, (size_t)(p - head))) < 0)
		return rc;
	for (size_t i = 0; i < b->label_count; i++) {
		const struct sst_label *l = &b->labels[i];
		struct slice label = sst_builder_label(b, l);

		p = encode_varint32(head, (uint32_t)l->n);
		if ((rc = buf_append(out, head, (size_t)(p - head))) < 0 ||
		    (rc = buf_append(out, label.p, label.n)) < 0)
			return rc;
		p = encode_varint64(head, l->entries);
		p = encode_varint64(p, l->key_bytes);
		p = encode_varint64(p, l->value_bytes);
		if ((rc = buf_append(out, head, (size_t)(p - head))) < 0)
			return rc;
	}
	return 0;
}

/*
 * What the pending data block's index entry says of its value when the
 * block holds one entry in a version 5 table (format.h): the value's
 * length + 1; else 0.
 */
static uint64_t
sst_builder_lone_value(const struct sst_builder *b)
{
	if (b->data_block.count != 1 || !sst_builder_has_splits(b))
		return 0;
	return b->last_value_n + 1;
}

/* Add the index entry of the data block last_key ends, written at
 * (offset, size); lone_value as sst_builder_lone_value() gave it. */
static int
sst_builder_index_add(struct sst_builder *b, struct slice last_key,
    uint64_t offset, uint64_t size, uint64_t lone_value)
{
	uint8_t handle[3 * VARINT64_MAX_BYTES], *p;

	p = encode_varint64(handle, offset);
	p = encode_varint64(p, size);
	if (lone_value != 0)
		p = encode_varint64(p, lone_value - 1);
	return block_builder_add(&b->index_block, last_key,
	    slice_make(handle, (size_t)(p - handle)));
}

/* ---- The compression worker (opts.parallel) ---- */

/*
 * Seal slot i (claimed by this thread) and mark it sealed, waking the
 * builder if it waits.  Called and returns with w->mu held.
 */
static void
sst_worker_seal(struct sst_worker *w, uint64_t i)
{
	struct sst_slot *s = &w->slots[i % w->slot_count];

	mutex_assert_held(&w->mu);
	assert(i < w->submitted);
	mutex_unlock(&w->mu);
	s->rc = sst_block_seal(buf_slice(&s->raw), w->compress,
	    &s->compressed, &s->stored, s->trailer);
	mutex_lock(&w->mu);
	s->sealed = true;
	if (w->builder_waits)
		pthread_cond_signal(&w->sealed);
}

/* Seal the submitted blocks in order until told to stop. */
static void *
sst_worker_main(void *arg)
{
	struct sst_worker *w = arg;

	mutex_lock(&w->mu);
	for (;;) {
		while (w->claimed == w->submitted && !w->stop) {
			w->worker_waits = true;
			cond_wait(&w->queued, &w->mu);
			w->worker_waits = false;
		}
		if (w->stop)
			break;
		sst_worker_seal(w, w->claimed++);
	}
	mutex_unlock(&w->mu);
	return NULL;
}

/*
 * Start b's worker.  0, or -ENOMEM; when the thread cannot be created
 * the builder stays serial (a thread is a speed-up, not a need).
 */
static int
sst_worker_start(struct sst_builder *b)
{
	struct sst_worker *w;

	if ((w = bt_calloc(1, sizeof(*w))) == NULL)
		return -ENOMEM;
	w->compress = b->opts.compress;
	w->slot_count = SST_PARALLEL_BYTES / b->opts.block_size;
	if (w->slot_count < SST_PARALLEL_MIN_BLOCKS)
		w->slot_count = SST_PARALLEL_MIN_BLOCKS;
	if (w->slot_count > SST_PARALLEL_BLOCKS)
		w->slot_count = SST_PARALLEL_BLOCKS;
	for (size_t i = 0; i < SST_PARALLEL_BLOCKS; i++) {
		buf_init(&w->slots[i].raw);
		buf_init(&w->slots[i].compressed);
		buf_init(&w->slots[i].last_key);
	}
	if (mutex_init(&w->mu) != 0)
		goto out_free;
	if (pthread_cond_init(&w->queued, NULL) != 0)
		goto out_mutex;
	if (pthread_cond_init(&w->sealed, NULL) != 0)
		goto out_queued;
	if (pthread_create(&w->thread, NULL, sst_worker_main, w) != 0)
		goto out_sealed;
	b->worker = w;
	return 0;
out_sealed:
	pthread_cond_destroy(&w->sealed);
out_queued:
	pthread_cond_destroy(&w->queued);
out_mutex:
	mutex_destroy(&w->mu);
out_free:
	bt_free(w);
	b->opts.parallel = false;
	return 0;
}

/* Stop and join b's worker (the blocks in flight are dropped) and free
 * it.  For finish, after the blocks are written, and for free. */
static void
sst_worker_stop(struct sst_builder *b)
{
	struct sst_worker *w = b->worker;

	if (w == NULL)
		return;
	mutex_lock(&w->mu);
	w->stop = true;
	pthread_cond_signal(&w->queued);
	mutex_unlock(&w->mu);
	pthread_join(w->thread, NULL);
	pthread_cond_destroy(&w->sealed);
	pthread_cond_destroy(&w->queued);
	mutex_destroy(&w->mu);
	for (size_t i = 0; i < SST_PARALLEL_BLOCKS; i++) {
		buf_release(&w->slots[i].raw);
		buf_release(&w->slots[i].compressed);
		buf_release(&w->slots[i].last_key);
	}
	bt_free(w);
	b->worker = NULL;
}

/*
 * Write the sealed blocks, in order, and index them, until room is made
 * for one more (all: until every block submitted is written).  While
 * that needs blocks the worker has not claimed, they are sealed here;
 * only the one the worker is sealing is waited for.
 */
static int
sst_worker_write(struct sst_builder *b, bool all)
{
	struct sst_worker *w = b->worker;
	int rc;

	mutex_lock(&w->mu);
	assert(w->written <= w->claimed && w->claimed <= w->submitted);
	if (all && w->worker_waits && w->claimed < w->submitted)
		pthread_cond_signal(&w->queued);
	for (;;) {
		uint64_t n = 0;

		while (w->written + n < w->submitted &&
		    w->slots[(w->written + n) % w->slot_count].sealed)
			n++;
		if (n > 0) {
			mutex_unlock(&w->mu);
			for (; n > 0; n--, w->written++) {
				struct sst_slot *s = &w->slots[w->written %
				    w->slot_count];
				uint64_t offset, size;

				if ((rc = s->rc) < 0 ||
				    (rc = sst_builder_write_sealed(b,
				    s->stored, s->trailer, &offset,
				    &size)) < 0 ||
				    (rc = sst_builder_index_add(b,
				    buf_slice(&s->last_key), offset,
				    size, s->lone_value)) < 0)
					return rc;
			}
			mutex_lock(&w->mu);
			continue;	/* more may be sealed by now */
		}
		if (all ? w->written == w->submitted :
		    w->submitted - w->written < w->slot_count)
			break;
		if (w->claimed < w->submitted) {
			sst_worker_seal(w, w->claimed++);
			continue;
		}
		w->builder_waits = true;
		cond_wait(&w->sealed, &w->mu);
		w->builder_waits = false;
	}
	mutex_unlock(&w->mu);
	return 0;
}

/*
 * Hand the pending data block to the worker, once a slot is free (what
 * is sealed is written first), and wake the worker when it sleeps and
 * half the ring is queued.
 */
static int
sst_worker_submit(struct sst_builder *b)
{
	struct sst_worker *w = b->worker;
	struct sst_slot *s;
	int rc;

	if ((rc = sst_worker_write(b, false)) < 0)
		return rc;
	/* The slot is free: written, and submitted only changes here. */
	assert(w->submitted - w->written < w->slot_count);
	s = &w->slots[w->submitted % w->slot_count];
	s->lone_value = sst_builder_lone_value(b);
	if ((rc = buf_set(&s->last_key, b->last_key.p, b->last_key.n)) < 0 ||
	    (rc = block_builder_take(&b->data_block, &s->raw)) < 0)
		return rc;
	mutex_lock(&w->mu);
	s->sealed = false;
	w->submitted++;
	if (w->worker_waits &&
	    w->submitted - w->claimed >= w->slot_count / 2)
		pthread_cond_signal(&w->queued);
	mutex_unlock(&w->mu);
	return 0;
}

/*
 * Write the pending data block and add its index entry, or hand it to
 * the worker (opts.parallel), started here for a table's first block
 * unless it is also the last.
 */
static int
sst_builder_flush(struct sst_builder *b, bool last)
{
	struct slice contents;
	uint64_t offset, size, lone_value;
	int rc;

	if (b->data_block.count == 0)
		return 0;
	if (b->worker == NULL && b->opts.parallel && !last &&
	    (rc = sst_worker_start(b)) < 0)
		return rc;
	if (b->worker != NULL) {
		if ((rc = sst_worker_submit(b)) < 0)
			return rc;
		b->block_count++;
		return 0;
	}
	lone_value = sst_builder_lone_value(b);
	if ((rc = block_builder_finish(&b->data_block, &contents)) < 0)
		return rc;
	if ((rc = sst_builder_write_block(b, contents, true, &offset,
	    &size)) < 0)
		return rc;
	if ((rc = sst_builder_index_add(b, buf_slice(&b->last_key), offset,
	    size, lone_value)) < 0)
		return rc;
	block_builder_reset(&b->data_block);
	b->block_count++;
	return 0;
}

/* Record key's filter prefix hash unless it repeats the previous one. */
static int
sst_builder_add_filter_key(struct sst_builder *b, struct slice key)
{
	struct slice prefix = key;
	uint64_t hash;
	int rc;

	if (b->opts.filter_prefix != NULL) {
		size_t n = b->opts.filter_prefix(key);

		prefix.n = n < key.n ? n : key.n;
	}
	if (b->entry_count > 0 &&
	    slice_equal(prefix, buf_slice(&b->last_prefix)))
		return 0;
	if ((rc = buf_reserve(&b->hashes, sizeof(hash))) < 0)
		return rc;
	if ((rc = buf_set(&b->last_prefix, prefix.p, prefix.n)) < 0)
		return rc;
	hash = bloom_hash(prefix);
	(void)buf_append(&b->hashes, &hash, sizeof(hash));
	return 0;
}

/*
 * Widen the bounds to key.  Keys come sorted, so a column usually repeats
 * the last one; the others are searched in the (short) list.
 */
static int
sst_builder_add_bounds(struct sst_builder *b, struct slice key)
{
	uint8_t len[VARINT32_MAX_BYTES];
	struct slice column, list;
	uint64_t time;
	size_t lenn;
	int rc;

	if (!b->seqs_lost) {
		uint64_t seq;

		if (b->opts.key_sequence == NULL ||
		    !b->opts.key_sequence(key, &seq)) {
			b->seqs_lost = true;
		} else {
			if (b->entry_count == 0 || seq < b->min_seq)
				b->min_seq = seq;
			if (seq > b->max_seq)
				b->max_seq = seq;
		}
	}
	if (b->bounds_lost)
		return 0;
	if (!b->opts.key_column(key, &column, &time)) {
		b->bounds_lost = true;
		return 0;
	}
	if (time > b->max_time)
		b->max_time = time;
	if (b->column_count > 0 && slice_equal(column,
	    slice_make(b->columns.p + b->last_column_off, b->last_column_n)))
		return 0;
	list = buf_slice(&b->columns);
	while (list.n > 0) {
		uint32_t n;
		struct slice c;

		(void)get_varint32(&list, &n);	/* our own bytes */
		c = slice_make(list.p, n);
		if (slice_equal(c, column)) {
			b->last_column_off = (size_t)(c.p - b->columns.p);
			b->last_column_n = n;
			return 0;
		}
		list.p += n;
		list.n -= n;
	}
	if (b->column_count == SST_BOUNDS_MAX_COLUMNS ||
	    column.n > UINT32_MAX) {
		b->bounds_lost = true;
		return 0;
	}
	lenn = (size_t)(encode_varint32(len, (uint32_t)column.n) - len);
	if ((rc = buf_append(&b->columns, len, lenn)) < 0 ||
	    (rc = buf_append(&b->columns, column.p, column.n)) < 0)
		return rc;
	b->last_column_off = b->columns.n - column.n;
	b->last_column_n = column.n;
	b->column_count++;
	return 0;
}

/*
 * Key is the first of a new data block (not the table's first): mark the
 * boundary in the splits map when key starts with the filter key of the
 * last key of the block before.
 */
static int
sst_builder_add_split(struct sst_builder *b, struct slice key)
{
	struct slice last = buf_slice(&b->last_key);
	uint64_t i = b->block_count - 1;
	size_t n = b->opts.filter_prefix(last);
	int rc;

	if (n < last.n)
		last.n = n;
	if (!slice_starts_with(key, last))
		return 0;
	if (i / 8 >= b->splits.n) {
		size_t grow = (size_t)(i / 8) + 1 - b->splits.n;

		if ((rc = buf_reserve(&b->splits, grow)) < 0)
			return rc;
		memset(b->splits.p + b->splits.n, 0, grow);
		b->splits.n += grow;
	}
	b->splits.p[i / 8] |= (uint8_t)(1u << (i % 8));
	return 0;
}

/* The bounds block's contents (format.h) into out. */
static int
sst_builder_bounds_block(const struct sst_builder *b, struct buf *out)
{
	uint8_t head[VARINT32_MAX_BYTES * 3 + VARINT64_MAX_BYTES * 3];
	uint8_t *p = head;
	bool complete = !b->bounds_lost;
	bool seqs = !b->seqs_lost && b->entry_count > 0;
	bool splits = sst_builder_has_splits(b);
	bool usage = sst_builder_has_usage(b);
	size_t map_n = (size_t)((b->block_count + 7) / 8);
	int rc;

	p = encode_varint32(p, (complete ? SST_BOUNDS_COMPLETE : 0) |
	    (seqs ? SST_BOUNDS_SEQUENCES : 0) |
	    (splits ? SST_BOUNDS_SPLITS : 0) |
	    (usage ? SST_BOUNDS_USAGE : 0));
	if (seqs) {
		p = encode_varint64(p, b->min_seq);
		p = encode_varint64(p, b->max_seq);
	}
	if (splits) {
		if (map_n > UINT32_MAX)
			return bt_error_set(BT_ETOOBIG, "%s: %llu blocks",
			    b->file->path,
			    (unsigned long long)b->block_count);
		p = encode_varint32(p, (uint32_t)map_n);
	}
	if (buf_append(out, head, (size_t)(p - head)) < 0)
		return -ENOMEM;
	if (splits) {
		/* The map holds bytes up to the last boundary marked. */
		size_t have = b->splits.n < map_n ? b->splits.n : map_n;

		if ((rc = buf_append(out, b->splits.p, have)) < 0 ||
		    (rc = buf_reserve(out, map_n - have)) < 0)
			return rc;
		memset(out->p + out->n, 0, map_n - have);
		out->n += map_n - have;
	}
	if (usage && (rc = sst_builder_usage_append(b, out)) < 0)
		return rc;
	p = head;
	if (complete) {
		p = encode_varint64(p, b->max_time);
		p = encode_varint32(p, (uint32_t)b->column_count);
	}
	if (buf_append(out, head, (size_t)(p - head)) < 0 ||
	    (complete && buf_append(out, b->columns.p, b->columns.n) < 0))
		return -ENOMEM;
	return 0;
}

int
sst_builder_add(struct sst_builder *b, struct slice key, struct slice value)
{
	int rc;

	if (b->status < 0 || b->file == NULL)
		return BT_ECLOSED;
	if (b->entry_count > 0 &&
	    slice_compare(key, buf_slice(&b->last_key)) <= 0)
		return bt_error_set(-EINVAL,
		    "%s: key %llu is not above the previous key",
		    b->file->path, (unsigned long long)b->entry_count);
	if (key.n > SST_MAX_ENTRY_SIZE || value.n > SST_MAX_ENTRY_SIZE - key.n)
		return bt_error_set(BT_ETOOBIG,
		    "%s: entry of %zu + %zu bytes", b->file->path, key.n,
		    value.n);

	/* An entry of a block's size or more gets a block of its own, whose
	 * index entry then gives its value's length (format.h). */
	if (b->data_block.count > 0 && key.n + value.n >= b->opts.block_size &&
	    (rc = sst_builder_flush(b, false)) < 0)
		goto fail;
	if (b->opts.bloom_bits_per_key > 0 &&
	    (rc = sst_builder_add_filter_key(b, key)) < 0)
		goto fail;
	if (b->opts.key_column != NULL &&
	    (rc = sst_builder_add_bounds(b, key)) < 0)
		goto fail;
	if (sst_builder_has_usage(b) &&
	    (rc = sst_builder_add_usage(b, key, value)) < 0)
		goto fail;
	if (b->data_block.count == 0 && b->block_count > 0 &&
	    sst_builder_has_splits(b) &&
	    (rc = sst_builder_add_split(b, key)) < 0)
		goto fail;
	if ((rc = block_builder_add(&b->data_block, key, value)) < 0)
		goto fail;
	if ((rc = buf_set(&b->last_key, key.p, key.n)) < 0)
		goto fail;
	b->last_value_n = value.n;
	b->entry_count++;
	if (block_builder_size_estimate(&b->data_block) >= b->opts.block_size &&
	    (rc = sst_builder_flush(b, false)) < 0)
		goto fail;
	return 0;
fail:
	b->status = rc;
	return rc;
}

/*
 * The filter and index blocks, then the footer; the filter is absent
 * (offset at its place, size 0, no trailer) when no Bloom bits were asked.
 */
int
sst_builder_finish(struct sst_builder *b, struct sst_info *info)
{
	uint8_t footer[SST_FOOTER_SIZE];
	uint64_t data_size, filter_offset, filter_size = 0;
	uint64_t index_offset, index_size;
	struct slice index;
	struct buf filter;
	int rc;

	buf_init(&filter);
	if (b->status < 0 || b->file == NULL) {
		rc = BT_ECLOSED;
		goto out;
	}
	if ((rc = sst_builder_flush(b, true)) < 0)
		goto out_fail;
	if (b->worker != NULL) {
		if ((rc = sst_worker_write(b, true)) < 0)
			goto out_fail;
		sst_worker_stop(b);
	}
	data_size = b->offset;
	filter_offset = b->offset;
	if (b->opts.bloom_bits_per_key > 0) {
		if ((rc = bloom_build((const uint64_t *)b->hashes.p,
		    b->hashes.n / sizeof(uint64_t), b->opts.bloom_bits_per_key,
		    &filter)) < 0)
			goto out_fail;
		if ((rc = sst_builder_write_block(b, buf_slice(&filter), false,
		    &filter_offset, &filter_size)) < 0)
			goto out_fail;
	}
	if (b->opts.key_column != NULL) {
		uint64_t bounds_offset, bounds_size;

		buf_clear(&filter);
		if ((rc = sst_builder_bounds_block(b, &filter)) < 0 ||
		    (rc = sst_builder_write_block(b, buf_slice(&filter),
		    false, &bounds_offset, &bounds_size)) < 0)
			goto out_fail;
	}
	if ((rc = block_builder_finish(&b->index_block, &index)) < 0)
		goto out_fail;
	if ((rc = sst_builder_write_block(b, index, true, &index_offset,
	    &index_size)) < 0)
		goto out_fail;

	put_fixed64(footer, index_offset);
	put_fixed64(footer + 8, index_size);
	put_fixed64(footer + 16, filter_offset);
	put_fixed64(footer + 24, filter_size);
	put_fixed64(footer + 32, b->entry_count);
	put_fixed64(footer + 40, data_size);
	put_fixed32(footer + 48, sst_builder_has_splits(b) ?
	    SST_FORMAT_VERSION : b->opts.key_column != NULL ?
	    SST_FORMAT_VERSION_2 : SST_FORMAT_VERSION_1);
	put_fixed32(footer + 52, crc32c_mask(crc32c_value(footer, 52)));
	put_fixed64(footer + 56, SST_MAGIC);
	if ((rc = sst_builder_write(b, footer, sizeof(footer))) < 0 ||
	    (rc = sst_builder_drain(b)) < 0)
		goto out_fail;
	b->offset += sizeof(footer);
	if ((rc = env_file_sync(b->file)) < 0)
		goto out_fail;
	rc = env_file_close(b->file);
	b->file = NULL;
	if (rc < 0)
		goto out_fail;

	if (info != NULL) {
		info->entry_count = b->entry_count;
		info->file_size = b->offset;
		info->data_size = data_size;
		info->block_count = b->block_count;
	}
	buf_release(&filter);
	return 0;
out_fail:
	b->status = rc;
out:
	buf_release(&filter);
	return rc;
}

void
sst_builder_free(struct sst_builder *b)
{
	if (b == NULL)
		return;
	sst_worker_stop(b);
	(void)env_file_close(b->file);
	block_builder_release(&b->data_block);
	block_builder_release(&b->index_block);
	buf_release(&b->last_key);
	buf_release(&b->splits);
	buf_release(&b->compressed);
	buf_release(&b->hashes);
	buf_release(&b->last_prefix);
	buf_release(&b->pending);
	buf_release(&b->columns);
	buf_release(&b->label_bytes);
	bt_free(b->labels);
	bt_free(b);
}
