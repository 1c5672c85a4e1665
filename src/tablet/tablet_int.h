/*
 * tablet_int.h - what tablet.c and tablet_read.c share: the tablet, its
 * versions, files and schema, and the helpers both sides use.
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
};

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

	struct mutex mu;		/* guards current */
	struct tablet_version *current;

	/* Writer side. */
	struct memtable *mem;		/* == current->mem */
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

	/* Background side. */
	_Atomic uint64_t flushed_seq;	/* read by any thread */
	atomic_uint_fast64_t flushes;
	atomic_uint_fast64_t compactions;
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
};

/* The family of the schema named family, or NULL. */
const struct tablet_family *tablet_schema_family(
    const struct tablet_schema *s, struct slice family);
/* The cells_schema callback: a family's GC policy. */
bool tablet_schema_family_policy(void *arg, struct slice family,
    const struct gc_policy **policy, uint64_t *created_seq);
/* The error of a read that needs damaged file f, naming it. */
int tablet_file_error(const struct tablet_file *f);
/* The current version, referenced; and dropping a reference. */
struct tablet_version *tablet_version_get(struct tablet *t);
void tablet_version_unref(struct tablet_version *v);
/* Charge t cost reads that consulted several files of group g (tablet.h,
 * TABLET_SEEK_BYTES): one relaxed atomic add; the read that uses the
 * budget up records g and calls tenv.compact_wanted. */
void tablet_read_charge(struct tablet *t, size_t g, int64_t cost);
/* Restrict an iterator to the tablet's own rows (a split child shares
 * its parent's files); takes ownership of *it. */
int tablet_range_wrap(struct tablet *t, struct iter **it);

#endif
