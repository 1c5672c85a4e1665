/*
 * tablet_int.h - what the tablet's files share: the tablet, its versions,
 * files and schema, and tablet.c's helpers for them.  tablet.c is the
 * bottom of the folder's tablet files; tablet_read.c, tablet_compact.c
 * and tablet_split.c call into it, never the other way; tablet_point.c
 * calls into tablet_read.c (the read sources) and tablet.c;
 * tablet_ingest.c calls into tablet_compact.c (its output files) and
 * tablet.c.
 */
#ifndef TABLETFS_TABLET_TABLET_INT_H
#define TABLETFS_TABLET_TABLET_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "catalog/catalog.h"
#include "memtable/memtable.h"
#include "sstable/sstable.h"
#include "tablet/tablet.h"
#include "tablet/usage.h"
#include "util/buf.h"
#include "util/iter.h"
#include "util/mutex.h"

#define NO_GROUP SIZE_MAX	/* a file of a group the schema lost */

struct tablet_family {
	char name[CATALOG_NAME_MAX + 1];
	struct gc_policy *policy;	/* NULL: keep every version */
	uint64_t created_seq;
	size_t group;
};

struct tablet_group {
	char name[CATALOG_NAME_MAX + 1];
	struct sst_options opts;
	bool in_memory;		/* warm the block cache with its files */
};

struct tablet_schema {
	atomic_int refs;
	uint64_t table_id;
	size_t family_count;
	struct tablet_family *families;
	size_t group_count;
	struct tablet_group *groups;
	bool uses_age;			/* a family's policy has a maxage */
};

/* Why a file named by the catalog could not be opened; shared by the
 * versions (and split or merged tablets) that keep the file. */
struct file_damage {
	atomic_int refs;
	int rc;			/* BT_ECHECKSUM, BT_ECORRUPT or -EIO */
	char detail[256];
};

struct tablet_file {
	struct catalog_file meta;
	size_t group;
	/* NULL when the file is damaged: kept in the version, never
	 * compacted or deleted, and every read that needs it fails. */
	struct sst_reader *reader;
	struct file_damage *damage;
};

struct tablet_version {
	atomic_int refs;
	struct memtable *mem;
	struct memtable *imm;		/* frozen, being flushed; or NULL */
	struct tablet_schema *schema;
	size_t file_count;
	struct tablet_file *files;	/* newest first */
	/* T5: the file whose last key is the greatest, or NULL. */
	const struct sst_reader *files_end;
};

/*
 * The tablet's invariants, cited by number in the tablet files:
 *
 * T1. Versions.  current changes only under mu, to a version built from
 *     current under mu (tablet_version_install_locked()); a version is
 *     never changed once installed, so readers use it without the lock.
 * T2. Sequence order.  Applies and freezes come from one thread at a
 *     time, in sequence order (tablet.h; docs/design.md section 7, W2):
 *     each apply's first sequence number is above every one applied.
 * T3. The active memtable.  mem is current->mem; a freeze replaces both
 *     under mu, moving the old one to current->imm.
 * T4. One file adder.  Only the thread that runs the tablet's flushes and
 *     compactions adds files to it (tablet.h), so room counted for a new
 *     version before the catalog changes is room enough after.
 * T5. The files' end.  A version's files_end is the reader of its file
 *     with the greatest last key, set when the version is installed or
 *     its tablet opened (tablet_version_end_files()), or NULL: while it
 *     is unset, when a file is damaged (its rows are unknown and a read
 *     must fail naming it) or when no file has entries.  A row prefix
 *     past files_end's last key is in none of the version's files.
 */
/* Set v->files_end from v's files (T5), before v is published. */
void tablet_version_end_files(struct tablet_version *v);

struct tablet {
	atomic_int refs;
	struct tablet_env tenv;
	uint64_t id;
	uint64_t table_id;
	struct buf start;
	struct buf end;			/* empty: no end */
	/* The range as bounds on internal keys: esc(start) and esc(end),
	 * empty for an open bound (range_iter.h). */
	struct buf key_lo, key_hi;

	/* Cleared once by tablet_serving_stop(), never set again. */
	atomic_bool serving;

	struct mutex mu;		/* guards current (T1) */
	struct tablet_version *current;

	/* Writer side. */
	struct memtable *mem;		/* == current->mem (T3) */
	/* Bytes of mem's entries (beyond what an empty one holds), for
	 * threads not applying. */
	_Atomic size_t mem_usage;
	size_t mem_base;		/* what mem held when empty */
	uint64_t imm_bytes;		/* mem_usage of imm; guarded by mu */
	struct buf key_scratch;
	/* Stored by the writer (relaxed), read by the background's idle
	 * check too. */
	_Atomic uint64_t last_applied_seq;
	_Atomic uint64_t mem_first_seq;	/* UINT64_MAX: empty */
	_Atomic uint64_t imm_first_seq;
	uint64_t imm_max_seq;
	/* What the memtables hold per family (usage.h): mem_families what
	 * tablet_apply added to mem, imm_families what the frozen one
	 * holds (cleared when its flush is installed).  Guarded by
	 * usage_mu, taken after mu when both are held.  A freeze keeps
	 * mem_families' labels (with zero counts), so that an apply
	 * reserved by tablet_reserve() never allocates. */
	struct mutex usage_mu;
	struct usage mem_families, imm_families;

	/* Background side. */
	_Atomic uint64_t flushed_seq;	/* read by any thread */
	atomic_uint_fast64_t flushes;
	atomic_uint_fast64_t compactions;
	/* Requests served (tablet_request_note()), read by any thread. */
	atomic_uint_fast64_t requests;
	/* Rows of every TABLET_SAMPLE_EVERY-th request, the last
	 * TABLET_SAMPLES of them, for tablet_request_split_row(); a request
	 * skips its sample when another thread holds sample_mu. */
	struct mutex sample_mu;
	struct buf samples[TABLET_SAMPLES];
	size_t sample_next, sample_count;
	/* Read-triggered compaction (tablet.h, TABLET_SEEK_BYTES): the reads
	 * left before the group seek_group is merged, reset when a flush or
	 * compaction changes the files; seek_group is set by the read that
	 * used the budget up (NO_GROUP before). */
	_Atomic int64_t seek_allowance;
	_Atomic size_t seek_group;
	/* Idle compaction (tablet.h, TABLET_IDLE_USEC), on the thread that
	 * runs the tablet's compactions: last_applied_seq as the last
	 * tablet_idle_check() saw it, the time of the call that first saw
	 * it (0: none yet), and whether the tablet has been idle since for
	 * TABLET_IDLE_USEC with data that an idle compaction would merge. */
	uint64_t idle_seq;
	int64_t idle_since;
	bool idle;
	bool idle_decided;	/* idle_overlap() asked this quiet period */
	/* The files of the last merging compaction that failed (their
	 * count and largest number; 0: none failed), which
	 * tablet_needs_compaction() does not offer again: a tablet whose
	 * merge outgrows the largest file storage takes would otherwise
	 * rewrite it every round.  On the compactions' thread. */
	size_t failed_file_count;
	uint64_t failed_file_max;
};

/* BT_ENOTSERVING, its detail naming t (tablet_serving()). */
int tablet_not_serving(const struct tablet *t);

/* The index in s->groups of the group named name, or NO_GROUP. */
size_t tablet_schema_group_index(const struct tablet_schema *s,
    const char *name);
/* The family of the schema named family, or NULL. */
const struct tablet_family *tablet_schema_family(
    const struct tablet_schema *s, struct slice family);
/* The cells_schema callback: a family's GC policy. */
bool tablet_schema_family_policy(void *arg, struct slice family,
    const struct gc_policy **policy, uint64_t *created_seq);
/* The error of a read that needs damaged file f, naming it. */
int tablet_file_error(const struct tablet_file *f);
/* Take another reference to f's reader or damage (for a copy of f); and
 * drop one. */
void tablet_file_ref(const struct tablet_file *f);
void tablet_file_unref(const struct tablet_file *f);
/* The path of SSTable number in dir. */
void tablet_sst_path(char *dst, size_t size, const char *dir,
    uint64_t number);
/* Open SSTable meta, warming the block cache when its group is in
 * memory. */
int tablet_file_open(const struct tablet_env *tenv,
    const struct catalog_file *meta, const struct tablet_schema *schema,
    struct sst_reader **out);

/* ---- Output files (tablet_compact.c) ---- */

/* An SSTable being written to tmp/ for one group. */
struct tablet_out {
	struct sst_builder *builder;
	struct catalog_file meta;
	char tmp_path[4096];
};

/*
 * Start an output file, numbered by the catalog, with g's options;
 * parallel: its blocks are compressed on a second thread
 * (sst_options.parallel).  The caller sets meta.max_seq.
 */
int tablet_out_start(struct tablet *t, const struct tablet_group *g,
    bool parallel, struct tablet_out *o);
/*
 * Finish an output file: sync it and move it into sst/ (the caller syncs
 * the directory once for all outputs).  On failure the tmp file is
 * removed.
 */
int tablet_out_finish(struct tablet *t, struct tablet_out *o);
/* Stop an output file being written and remove it; nothing if none. */
void tablet_out_abandon(struct tablet *t, struct tablet_out *o);

/* The current version, referenced; and dropping a reference. */
struct tablet_version *tablet_version_get(struct tablet *t);
void tablet_version_unref(struct tablet_version *v);
/* An empty version with room for room files, for tablet_version_share();
 * NULL on allocation failure. */
struct tablet_version *tablet_version_alloc(size_t room);
/* Make the empty version v, with room for from's files, share everything
 * with from. */
void tablet_version_share(struct tablet_version *v,
    const struct tablet_version *from);
/* A new version sharing everything with from, with room for extra more
 * files; NULL on allocation failure. */
struct tablet_version *tablet_version_copy(const struct tablet_version *from,
    size_t extra);
/* Give the version (made without files) room for count files. */
int tablet_version_files_alloc(struct tablet_version *v, size_t count);
/* Install v, built from t->current, as current.  Caller holds t->mu
 * (T1). */
void tablet_version_install_locked(struct tablet *t,
    struct tablet_version *v);

/* A tablet for catalog row ct with an empty memtable and no files yet:
 * the common start of opening, splitting and merging. */
int tablet_new(const struct tablet_env *tenv, const struct catalog_tablet *ct,
    struct tablet_schema *schema, struct tablet **out);
/* Count delta bytes more (or fewer) in the frozen memtables of all
 * tablets. */
void tablet_frozen_bytes_add(struct tablet *t, int64_t delta);
/* A new read budget for the files of v (tablet.h, TABLET_SEEK_BYTES). */
void tablet_seek_reset(struct tablet *t, const struct tablet_version *v);
/* Charge t cost reads that consulted several files of group g (tablet.h,
 * TABLET_SEEK_BYTES): one relaxed atomic add; the read that uses the
 * budget up records g and calls tenv.compact_wanted. */
void tablet_read_charge(struct tablet *t, size_t g, int64_t cost);
/* Restrict an iterator to the tablet's own rows (a split child shares
 * its parent's files); takes ownership of *it. */
int tablet_range_wrap(struct tablet *t, struct iter **it);

/*
 * What a read consulted, for its charge (tablet_read_charge()): the group
 * of the first SSTable visited and how many of that group's were.  A read
 * of several groups is charged for the first only: the common case is one
 * group, and a cheap count keeps the charge off the read's cost.
 */
struct tablet_charge {
	size_t group;
	size_t visits;
};

#define TABLET_CHARGE_INIT { NO_GROUP, 0 }

static inline void
tablet_charge_visit(struct tablet_charge *c, size_t g)
{
	if (c->group == NO_GROUP)
		c->group = g;
	if (c->group == g)
		c->visits++;
}

/* Whether the read consulted two files of one group: worth charging. */
static inline bool
tablet_charge_due(const struct tablet_charge *c)
{
	return c->visits >= 2;
}

/* Whether a read with filter f needs group g's files (schema s). */
bool tablet_filter_needs_group(const struct tablet_schema *s,
    const struct cells_filter *f, size_t g);
/*
 * A merging iterator over v's memtables and the SSTables that filter f
 * needs; when row_prefix is not empty, SSTables whose Bloom filter rules
 * the row out are left out.  The SSTables opened are counted in *charge
 * (NULL: not counted).  A memtable empty now is left out too: every read
 * through it is at a snapshot no newer than now.
 */
int tablet_version_iter_new(struct tablet_version *v,
    const struct cells_filter *f, struct slice row_prefix,
    struct tablet_charge *charge, struct iter **out);

#endif
