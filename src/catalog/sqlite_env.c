/*
 * sqlite_env.c - a SQLite VFS whose files are env files (sqlite_env.h).
 *
 * A struct sqlite_env holds the sqlite3_vfs that SQLite sees (its pAppData
 * points back at us) and the default VFS, which lends randomness, sleep,
 * time and dynamic loading, and opens the nameless temporary files.  The
 * file object SQLite allocates (szOsFile bytes) is a struct sqlite_env_file
 * for files of the env, or the default VFS's own object for temporary
 * files; SQLite reaches each through its pMethods.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <sqlite3.h>

#include "catalog/format.h"
#include "catalog/sqlite_env.h"
#include "util/alloc.h"
#include "util/coding.h"
#include "util/crc32c.h"
#include "util/env.h"
#include "util/error.h"

#if SQLITE_VERSION_NUMBER < 3032000
#error "page checksums need SQLite 3.32 or later (SQLITE_FCNTL_RESERVE_BYTES)"
#endif

/* SQLite's buffers for full path names hold this many bytes plus one. */
#define SQLITE_ENV_MAX_PATH	1024
/* The largest errno value; error codes below it are the project's own. */
#define SQLITE_ENV_MAX_ERRNO	4095

/* SQLite's file formats (https://sqlite.org/fileformat2.html). */
#define SQLITE_ENV_DB_HEADER	100	/* the database header, in page 1 */
#define SQLITE_ENV_MIN_PAGE	512
#define SQLITE_ENV_MAX_PAGE	65536
#define SQLITE_ENV_WAL_HEADER	32
#define SQLITE_ENV_FRAME_HEADER	24
#define SQLITE_ENV_WAL_MAGIC	0x377f0682u	/* | 1: big-endian sums */
#define SQLITE_ENV_NO_FRAME	UINT64_MAX

struct sqlite_env {
	sqlite3_vfs vfs;
	struct env *env;
	sqlite3_vfs *base;	/* the default VFS */
	atomic_int last_errno;	/* of the last failure, for xGetLastError */
	char name[48];
};

enum sqlite_env_kind {
	SQLITE_ENV_OTHER,	/* journals, attached temporary files */
	SQLITE_ENV_DB,		/* a main database: pages may be sealed */
	SQLITE_ENV_WAL,		/* a WAL: frames verified on read */
};

/* Whether a database's pages carry the trailer (CATALOG_PAGE_RESERVE). */
enum sqlite_env_sums {
	SQLITE_ENV_SUMS_UNKNOWN,	/* new: no header written yet */
	SQLITE_ENV_SUMS_OFF,
	SQLITE_ENV_SUMS_ON,
};

struct sqlite_env_file {
	sqlite3_file base;	/* first: SQLite's view of the object */
	struct sqlite_env *owner;
	struct env_file *f;
	char *path;
	char *dir;		/* the parent directory of path */
	bool dir_unsynced;	/* opened for writing, not yet synced */
	bool delete_on_close;
	enum sqlite_env_kind kind;
	/* A database. */
	enum sqlite_env_sums sums;
	uint32_t page_size;	/* when sums is not UNKNOWN */
	uint8_t *page;		/* scratch, SQLITE_ENV_MAX_PAGE bytes */
	/* A WAL. */
	uint8_t wal_header[SQLITE_ENV_WAL_HEADER];
	bool wal_header_known;
	uint64_t frame_header_last;	/* the last write was its header */
	uint64_t frame_stale_from;	/* frames rewritten in place */
};

static const sqlite3_io_methods sqlite_env_io_methods;

static struct sqlite_env *
sqlite_env_of(sqlite3_vfs *vfs)
{
	return vfs->pAppData;
}

/*
 * Remember the errno of a failed env call for xGetLastError, and turn the
 * failure into the SQLite code ioerr, or SQLITE_FULL for a full disk.
 */
static int
sqlite_env_error(struct sqlite_env *v, int rc, int ioerr)
{
	int err = rc < 0 && rc >= -SQLITE_ENV_MAX_ERRNO ? -rc : 0;

	atomic_store_explicit(&v->last_errno, err, memory_order_relaxed);
	if (rc == -ENOSPC || rc == -EDQUOT)
		return SQLITE_FULL;
	if (rc == -ENOMEM)
		return SQLITE_IOERR_NOMEM;
	return ioerr;
}

static int
sqlite_env_dir_sync(struct sqlite_env *v, const char *path)
{
	char *dir;
	int rc;

	if ((dir = env_path_parent(path)) == NULL)
		return SQLITE_IOERR_NOMEM;
	rc = env_dir_sync(v->env, dir);
	bt_free(dir);
	if (rc < 0)
		return sqlite_env_error(v, rc, SQLITE_IOERR_DIR_FSYNC);
	return SQLITE_OK;
}

static int
sqlite_env_close(sqlite3_file *file)
{
	struct sqlite_env_file *sf = (struct sqlite_env_file *)file;
	struct sqlite_env *v = sf->owner;
	int rc, src = SQLITE_OK;

	if ((rc = env_file_close(sf->f)) < 0)
		src = sqlite_env_error(v, rc, SQLITE_IOERR_CLOSE);
	if (sf->delete_on_close && (rc = env_path_remove(v->env,
	    sf->path)) < 0 && rc != -ENOENT && src == SQLITE_OK)
		src = sqlite_env_error(v, rc, SQLITE_IOERR_DELETE);
	bt_free(sf->path);
	bt_free(sf->dir);
	bt_free(sf->page);
	file->pMethods = NULL;
	return src;
}

static uint32_t
sqlite_env_get_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	    (uint32_t)p[2] << 8 | p[3];
}

/* ---- Database pages: the trailer of catalog/format.h ---- */

/*
 * The page size and reserved bytes of the database header h (at least
 * SQLITE_ENV_DB_HEADER bytes), or false if h is not one.
 */
static bool
sqlite_env_header_parse(const uint8_t *h, uint32_t *page_size,
    unsigned *reserve)
{
	uint32_t ps;

	if (memcmp(h, "SQLite format 3", 16) != 0)
		return false;
	ps = (uint32_t)h[16] << 8 | h[17];
	if (ps == 1)
		ps = SQLITE_ENV_MAX_PAGE;
	if (ps < SQLITE_ENV_MIN_PAGE || ps > SQLITE_ENV_MAX_PAGE ||
	    (ps & (ps - 1)) != 0)
		return false;
	*page_size = ps;
	*reserve = h[20];
	return true;
}

static uint32_t
sqlite_env_page_sum(const uint8_t *p, uint32_t ps)
{
	return crc32c_mask(crc32c_value(p, ps - 4));
}

/* Write the trailer of page pgno (1-based) into its last bytes. */
static void
sqlite_env_page_seal(uint8_t *p, uint32_t ps, uint64_t pgno)
{
	put_fixed32(p + ps - CATALOG_PAGE_RESERVE, (uint32_t)pgno);
	put_fixed32(p + ps - 4, sqlite_env_page_sum(p, ps));
}

static bool
sqlite_env_page_sound(const uint8_t *p, uint32_t ps, uint64_t pgno)
{
	return get_fixed32(p + ps - CATALOG_PAGE_RESERVE) == (uint32_t)pgno &&
	    get_fixed32(p + ps - 4) == sqlite_env_page_sum(p, ps);
}

static int
sqlite_env_page_mismatch(struct sqlite_env_file *sf, uint64_t pgno)
{
	return sqlite_env_error(sf->owner, bt_error_set(BT_ECHECKSUM,
	    "%s: page %" PRIu64 " checksum mismatch", sf->path, pgno),
	    SQLITE_IOERR_DATA);
}

/*
 * Read page pgno of a sealed database into dst and verify it.  A page past
 * the end is zeros and SQLITE_IOERR_SHORT_READ, as SQLite expects; a page
 * cut short is damage.
 */
static int
sqlite_env_page_read(struct sqlite_env_file *sf, uint64_t pgno, uint8_t *dst)
{
	uint32_t ps = sf->page_size;
	size_t got;
	int rc;

	if ((rc = env_file_read_at(sf->f, (pgno - 1) * ps, dst, ps,
	    &got)) < 0)
		return sqlite_env_error(sf->owner, rc, SQLITE_IOERR_READ);
	if (got < ps)
		memset(dst + got, 0, ps - got);
	if (got == 0)
		return SQLITE_IOERR_SHORT_READ;
	if (!sqlite_env_page_sound(dst, ps, pgno))
		return sqlite_env_page_mismatch(sf, pgno);
	return SQLITE_OK;
}

/*
 * Decide from a database header whether the file's pages are sealed.  A
 * header whose reserve byte alone was damaged still says so: page 1 then
 * seals correctly with CATALOG_PAGE_RESERVE in its place, and reading it
 * fails, as any damaged page does.
 */
static int
sqlite_env_db_learn(struct sqlite_env_file *sf)
{
	uint8_t h[SQLITE_ENV_DB_HEADER];
	uint32_t ps;
	unsigned reserve;
	size_t got;
	int rc;

	if ((rc = env_file_read_at(sf->f, 0, h, sizeof(h), &got)) < 0)
		return sqlite_env_error(sf->owner, rc, SQLITE_IOERR_READ);
	if (got < sizeof(h) || !sqlite_env_header_parse(h, &ps, &reserve))
		return SQLITE_OK;	/* new, or not a database: SQLite says */
	sf->page_size = ps;
	sf->sums = reserve == CATALOG_PAGE_RESERVE ? SQLITE_ENV_SUMS_ON :
	    SQLITE_ENV_SUMS_OFF;
	if (sf->sums == SQLITE_ENV_SUMS_OFF) {
		if ((rc = env_file_read_at(sf->f, 0, sf->page, ps, &got)) < 0)
			return sqlite_env_error(sf->owner, rc,
			    SQLITE_IOERR_READ);
		sf->page[20] = CATALOG_PAGE_RESERVE;
		if (got == ps && sqlite_env_page_sound(sf->page, ps, 1))
			sf->sums = SQLITE_ENV_SUMS_ON;
	}
	return SQLITE_OK;
}

/*
 * Seal every page of the file but page 1, once the database turns sealed
 * (a new file whose first pages SQLite spilled before page 1, or a VACUUM
 * that added the reserve): pages written before then have no trailer.
 */
static int
sqlite_env_db_seal_all(struct sqlite_env_file *sf)
{
	uint32_t ps = sf->page_size;
	uint64_t size;
	int rc;

	if ((rc = env_file_size(sf->f, &size)) < 0)
		return sqlite_env_error(sf->owner, rc, SQLITE_IOERR_FSTAT);
	for (uint64_t pgno = 2; pgno <= size / ps; pgno++) {
		if ((rc = env_file_read_exact(sf->f, (pgno - 1) * ps,
		    sf->page, ps)) < 0)
			return sqlite_env_error(sf->owner, rc,
			    SQLITE_IOERR_READ);
		sqlite_env_page_seal(sf->page, ps, pgno);
		if ((rc = env_file_write_at(sf->f, (pgno - 1) * ps,
		    sf->page, ps)) < 0)
			return sqlite_env_error(sf->owner, rc,
			    SQLITE_IOERR_WRITE);
	}
	return SQLITE_OK;
}

/*
 * A read of a sealed database.  SQLite reads whole pages, except the
 * header (100 bytes) and the beginnings of overflow pages; every page the
 * read touches is read whole and verified.
 */
static int
sqlite_env_db_read(struct sqlite_env_file *sf, uint8_t *buf, size_t amt,
    uint64_t ofst)
{
	uint32_t ps = sf->page_size;
	uint64_t pos, end = ofst + amt;
	int src, short_read = SQLITE_OK;

	if (amt == ps && ofst % ps == 0)
		return sqlite_env_page_read(sf, ofst / ps + 1, buf);
	for (pos = ofst; pos < end; ) {
		uint64_t pgno = pos / ps + 1;
		size_t in = (size_t)(pos % ps);
		size_t n = ps - in < end - pos ? ps - in : (size_t)(end - pos);

		src = sqlite_env_page_read(sf, pgno, sf->page);
		if (src == SQLITE_IOERR_SHORT_READ)
			short_read = src;
		else if (src != SQLITE_OK)
			return src;
		memcpy(buf + (pos - ofst), sf->page + in, n);
		pos += n;
	}
	return short_read;
}

/*
 * A write to a database: learn from page 1 whether its pages are sealed,
 * and seal each page written (a partial page is read, verified and
 * merged first).
 */
static int
sqlite_env_db_write(struct sqlite_env_file *sf, const uint8_t *buf,
    size_t amt, uint64_t ofst)
{
	enum sqlite_env_sums was = sf->sums;
	uint64_t pos, end = ofst + amt;
	uint32_t ps;
	unsigned reserve;
	int rc, src;

	if (ofst == 0 && amt >= SQLITE_ENV_DB_HEADER &&
	    sqlite_env_header_parse(buf, &ps, &reserve)) {
		sf->page_size = ps;
		sf->sums = reserve == CATALOG_PAGE_RESERVE ?
		    SQLITE_ENV_SUMS_ON : SQLITE_ENV_SUMS_OFF;
		if (was != SQLITE_ENV_SUMS_ON &&
		    sf->sums == SQLITE_ENV_SUMS_ON &&
		    (src = sqlite_env_db_seal_all(sf)) != SQLITE_OK)
			return src;
	}
	if (sf->sums != SQLITE_ENV_SUMS_ON) {
		if ((rc = env_file_write_at(sf->f, ofst, buf, amt)) < 0)
			return sqlite_env_error(sf->owner, rc,
			    SQLITE_IOERR_WRITE);
		return SQLITE_OK;
	}
	ps = sf->page_size;
	for (pos = ofst; pos < end; ) {
		uint64_t pgno = pos / ps + 1;
		size_t in = (size_t)(pos % ps);
		size_t n = ps - in < end - pos ? ps - in : (size_t)(end - pos);

		if (n < ps && (src = sqlite_env_page_read(sf, pgno,
		    sf->page)) != SQLITE_OK && src != SQLITE_IOERR_SHORT_READ)
			return src;
		memcpy(sf->page + in, buf + (pos - ofst), n);
		sqlite_env_page_seal(sf->page, ps, pgno);
		if ((rc = env_file_write_at(sf->f, (pgno - 1) * ps, sf->page,
		    ps)) < 0)
			return sqlite_env_error(sf->owner, rc,
			    SQLITE_IOERR_WRITE);
		pos += n;
	}
	return SQLITE_OK;
}

/* ---- WAL frames: SQLite's own checksums, verified on every read ---- */

/* The WAL header, read once and then kept as SQLite writes it. */
static int
sqlite_env_wal_header(struct sqlite_env_file *sf, uint32_t *page_size)
{
	uint8_t *h = sf->wal_header;
	size_t got;
	int rc;

	*page_size = 0;
	if (!sf->wal_header_known) {
		if ((rc = env_file_read_at(sf->f, 0, h, SQLITE_ENV_WAL_HEADER,
		    &got)) < 0)
			return sqlite_env_error(sf->owner, rc,
			    SQLITE_IOERR_READ);
		if (got < SQLITE_ENV_WAL_HEADER)
			return SQLITE_OK;
		sf->wal_header_known = true;
	}
	if ((sqlite_env_get_be32(h) & ~1u) == SQLITE_ENV_WAL_MAGIC)
		*page_size = sqlite_env_get_be32(h + 8);
	return SQLITE_OK;
}

/* The index of the frame whose page image is amt bytes at ofst, or
 * SQLITE_ENV_NO_FRAME (head: the frame's header instead). */
static uint64_t
sqlite_env_frame_of(uint32_t ps, size_t amt, uint64_t ofst, bool head)
{
	uint64_t frame = ps + SQLITE_ENV_FRAME_HEADER, at;

	if (ps < SQLITE_ENV_MIN_PAGE || ofst < SQLITE_ENV_WAL_HEADER ||
	    amt != (head ? SQLITE_ENV_FRAME_HEADER : ps))
		return SQLITE_ENV_NO_FRAME;
	at = (ofst - SQLITE_ENV_WAL_HEADER) % frame;
	if (at != (head ? 0 : SQLITE_ENV_FRAME_HEADER))
		return SQLITE_ENV_NO_FRAME;
	return (ofst - SQLITE_ENV_WAL_HEADER) / frame;
}

/* SQLite's WAL checksum (fileformat2 section 4.1), continuing s. */
static void
sqlite_env_wal_sum(bool big, const uint8_t *p, size_t n, uint32_t s[2])
{
	for (size_t i = 0; i + 8 <= n; i += 8) {
		uint32_t x0 = big ? sqlite_env_get_be32(p + i) :
		    get_fixed32(p + i);
		uint32_t x1 = big ? sqlite_env_get_be32(p + i + 4) :
		    get_fixed32(p + i + 4);

		s[0] += x0 + s[1];
		s[1] += x1 + s[0];
	}
}

/*
 * Whether a frame (its header fh and page image) belongs to the WAL whose
 * header is h (the salts) and has the checksum that continues from prev,
 * the stored checksum of the frame before it (or of the header).
 */
static bool
sqlite_env_frame_sound(const uint8_t *h, const uint8_t *fh,
    const uint8_t *page, uint32_t ps, const uint8_t *prev)
{
	uint32_t s[2];

	s[0] = sqlite_env_get_be32(prev);
	s[1] = sqlite_env_get_be32(prev + 4);
	sqlite_env_wal_sum(h[3] & 1, fh, 8, s);
	sqlite_env_wal_sum(h[3] & 1, page, ps, s);
	return memcmp(fh + 8, h + 16, 8) == 0 &&
	    s[0] == sqlite_env_get_be32(fh + 16) &&
	    s[1] == sqlite_env_get_be32(fh + 20);
}

/*
 * Verify the page image of frame k just read into page against the
 * frame's checksum, which continues from the previous frame's (or the
 * header's) stored one: each frame is checked on its own.
 */
static int
sqlite_env_frame_verify(struct sqlite_env_file *sf, uint64_t k,
    const uint8_t *page, uint32_t ps)
{
	const uint8_t *h = sf->wal_header;
	uint8_t fh[SQLITE_ENV_FRAME_HEADER], prev[8];
	uint64_t frame = ps + SQLITE_ENV_FRAME_HEADER;
	uint64_t at = SQLITE_ENV_WAL_HEADER + k * frame;
	int rc;

	if ((rc = env_file_read_exact(sf->f, at, fh, sizeof(fh))) < 0)
		return sqlite_env_error(sf->owner, rc, SQLITE_IOERR_READ);
	if (k == 0)
		memcpy(prev, h + 24, sizeof(prev));
	else if ((rc = env_file_read_exact(sf->f, at - frame + 16, prev,
	    sizeof(prev))) < 0)
		return sqlite_env_error(sf->owner, rc, SQLITE_IOERR_READ);
	if (sqlite_env_frame_sound(h, fh, page, ps, prev))
		return SQLITE_OK;
	return sqlite_env_error(sf->owner, bt_error_set(BT_ECHECKSUM,
	    "%s: frame %" PRIu64 " (page %" PRIu32 ") checksum mismatch",
	    sf->path, k + 1, sqlite_env_get_be32(fh)), SQLITE_IOERR_DATA);
}

/*
 * Verify a page image SQLite reads from its WAL.  Frames it rewrote in
 * place (a page written twice in one transaction) keep a stale checksum
 * until the commit recomputes them, and are not checked until the next
 * sync or WAL restart.  Whole frames (recovery, that recomputation) are
 * SQLite's to check.
 */
static int
sqlite_env_wal_read(struct sqlite_env_file *sf, const uint8_t *buf,
    size_t amt, uint64_t ofst)
{
	uint32_t ps;
	uint64_t k;
	int src;

	if (amt < SQLITE_ENV_MIN_PAGE)
		return SQLITE_OK;
	if ((src = sqlite_env_wal_header(sf, &ps)) != SQLITE_OK)
		return src;
	k = sqlite_env_frame_of(ps, amt, ofst, false);
	if (k == SQLITE_ENV_NO_FRAME || k >= sf->frame_stale_from)
		return SQLITE_OK;
	return sqlite_env_frame_verify(sf, k, buf, ps);
}

/* Follow SQLite's writes to its WAL: the header, and the frames it
 * rewrites in place (their page image without their header first). */
static int
sqlite_env_wal_written(struct sqlite_env_file *sf, const uint8_t *buf,
    size_t amt, uint64_t ofst)
{
	uint64_t last = sf->frame_header_last, k;
	uint32_t ps;
	int src;

	sf->frame_header_last = SQLITE_ENV_NO_FRAME;
	if (ofst < SQLITE_ENV_WAL_HEADER) {
		sf->wal_header_known = false;
		sf->frame_stale_from = SQLITE_ENV_NO_FRAME;
		if (ofst == 0 && amt >= SQLITE_ENV_WAL_HEADER) {
			memcpy(sf->wal_header, buf, SQLITE_ENV_WAL_HEADER);
			sf->wal_header_known = true;
		}
		return SQLITE_OK;
	}
	if ((src = sqlite_env_wal_header(sf, &ps)) != SQLITE_OK)
		return src;
	if ((k = sqlite_env_frame_of(ps, amt, ofst, true)) !=
	    SQLITE_ENV_NO_FRAME) {
		sf->frame_header_last = k;
	} else if ((k = sqlite_env_frame_of(ps, amt, ofst, false)) !=
	    SQLITE_ENV_NO_FRAME && k != last && k < sf->frame_stale_from) {
		sf->frame_stale_from = k;
	}
	return SQLITE_OK;
}

/* A read past the end fills the rest of buf with zeros, as SQLite needs. */
static int
sqlite_env_read(sqlite3_file *file, void *buf, int amt, sqlite3_int64 ofst)
{
	struct sqlite_env_file *sf = (struct sqlite_env_file *)file;
	size_t got;
	int rc;

	if (sf->kind == SQLITE_ENV_DB && sf->sums == SQLITE_ENV_SUMS_ON)
		return sqlite_env_db_read(sf, buf, (size_t)amt,
		    (uint64_t)ofst);
	if ((rc = env_file_read_at(sf->f, (uint64_t)ofst, buf, (size_t)amt,
	    &got)) < 0)
		return sqlite_env_error(sf->owner, rc, SQLITE_IOERR_READ);
	if (got < (size_t)amt) {
		memset((uint8_t *)buf + got, 0, (size_t)amt - got);
		return SQLITE_IOERR_SHORT_READ;
	}
	if (sf->kind == SQLITE_ENV_WAL)
		return sqlite_env_wal_read(sf, buf, (size_t)amt,
		    (uint64_t)ofst);
	return SQLITE_OK;
}

static int
sqlite_env_write(sqlite3_file *file, const void *buf, int amt,
    sqlite3_int64 ofst)
{
	struct sqlite_env_file *sf = (struct sqlite_env_file *)file;
	int rc;

	if (sf->kind == SQLITE_ENV_DB)
		return sqlite_env_db_write(sf, buf, (size_t)amt,
		    (uint64_t)ofst);
	if ((rc = env_file_write_at(sf->f, (uint64_t)ofst, buf,
	    (size_t)amt)) < 0)
		return sqlite_env_error(sf->owner, rc, SQLITE_IOERR_WRITE);
	if (sf->kind == SQLITE_ENV_WAL)
		return sqlite_env_wal_written(sf, buf, (size_t)amt,
		    (uint64_t)ofst);
	return SQLITE_OK;
}

static int
sqlite_env_truncate(sqlite3_file *file, sqlite3_int64 size)
{
	struct sqlite_env_file *sf = (struct sqlite_env_file *)file;
	int rc;

	if ((rc = env_file_truncate(sf->f, (uint64_t)size)) < 0)
		return sqlite_env_error(sf->owner, rc, SQLITE_IOERR_TRUNCATE);
	if (sf->kind == SQLITE_ENV_WAL) {
		sf->wal_header_known = false;
		sf->frame_header_last = SQLITE_ENV_NO_FRAME;
		sf->frame_stale_from = SQLITE_ENV_NO_FRAME;
	}
	return SQLITE_OK;
}

/*
 * Sync the data, then, the first time, the directory entry: a file created
 * by this open is not durable until its directory is synced, and one
 * opened again may have been created by a process that died before doing
 * so.  The flags (full, normal, data only) all mean fdatasync here.
 */
static int
sqlite_env_sync(sqlite3_file *file, int flags)
{
	struct sqlite_env_file *sf = (struct sqlite_env_file *)file;
	struct sqlite_env *v = sf->owner;
	int rc;

	if ((rc = env_file_sync(sf->f)) < 0)
		return sqlite_env_error(v, rc, SQLITE_IOERR_FSYNC);
	/* A commit recomputes the checksums of frames rewritten in place
	 * before it syncs. */
	sf->frame_stale_from = SQLITE_ENV_NO_FRAME;
	if (sf->dir_unsynced) {
		if ((rc = env_dir_sync(v->env, sf->dir)) < 0)
			return sqlite_env_error(v, rc, SQLITE_IOERR_DIR_FSYNC);
		sf->dir_unsynced = false;
	}
	return SQLITE_OK;
}

static int
sqlite_env_file_size(sqlite3_file *file, sqlite3_int64 *size)
{
	struct sqlite_env_file *sf = (struct sqlite_env_file *)file;
	uint64_t n;
	int rc;

	if ((rc = env_file_size(sf->f, &n)) < 0)
		return sqlite_env_error(sf->owner, rc, SQLITE_IOERR_FSTAT);
	*size = (sqlite3_int64)n;
	return SQLITE_OK;
}

/* Locks: the store has one owner process (sqlite_env.h). */
static int
sqlite_env_lock(sqlite3_file *file, int level)
{
	return SQLITE_OK;
}

static int
sqlite_env_check_reserved_lock(sqlite3_file *file, int *out)
{
	*out = 0;
	return SQLITE_OK;
}

static int
sqlite_env_file_control(sqlite3_file *file, int op, void *arg)
{
	return SQLITE_NOTFOUND;
}

static int
sqlite_env_sector_size(sqlite3_file *file)
{
	return 4096;
}

/* No promises (atomic or power-safe writes): SQLite assumes the worst. */
static int
sqlite_env_device_characteristics(sqlite3_file *file)
{
	return 0;
}

/* Version 1: no shared memory, no memory mapping. */
static const sqlite3_io_methods sqlite_env_io_methods = {
	.iVersion = 1,
	.xClose = sqlite_env_close,
	.xRead = sqlite_env_read,
	.xWrite = sqlite_env_write,
	.xTruncate = sqlite_env_truncate,
	.xSync = sqlite_env_sync,
	.xFileSize = sqlite_env_file_size,
	.xLock = sqlite_env_lock,
	.xUnlock = sqlite_env_lock,
	.xCheckReservedLock = sqlite_env_check_reserved_lock,
	.xFileControl = sqlite_env_file_control,
	.xSectorSize = sqlite_env_sector_size,
	.xDeviceCharacteristics = sqlite_env_device_characteristics,
};

/*
 * Open name in the env: SQLITE_OPEN_EXCLUSIVE creates it anew, a writable
 * open appends (creating the file only with SQLITE_OPEN_CREATE), others
 * read.  A nameless temporary file goes to the default VFS.
 */
static int
sqlite_env_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *file,
    int flags, int *out_flags)
{
	struct sqlite_env *v = sqlite_env_of(vfs);
	struct sqlite_env_file *sf = (struct sqlite_env_file *)file;
	enum env_open_mode mode;
	int rc, src;

	file->pMethods = NULL;
	if (name == NULL)
		return v->base->xOpen(v->base, NULL, file, flags, out_flags);
	memset(sf, 0, sizeof(*sf));
	sf->owner = v;
	if ((flags & SQLITE_OPEN_READWRITE) == 0)
		mode = ENV_READ;
	else if (flags & SQLITE_OPEN_EXCLUSIVE)
		mode = ENV_CREATE;
	else
		mode = ENV_APPEND;
	if (mode == ENV_APPEND && (flags & SQLITE_OPEN_CREATE) == 0 &&
	    !env_path_exists(v->env, name)) {
		src = sqlite_env_error(v, bt_error_set(-ENOENT,
		    "%s: open: %s", name, bt_strerror(-ENOENT)),
		    SQLITE_CANTOPEN);
		goto out;
	}
	if ((sf->path = bt_strdup(name)) == NULL ||
	    (sf->dir = env_path_parent(name)) == NULL) {
		src = SQLITE_NOMEM;
		goto out_free;
	}
	if ((rc = env_file_open(v->env, name, mode, &sf->f)) < 0) {
		src = rc == -ENOMEM ? SQLITE_NOMEM :
		    sqlite_env_error(v, rc, SQLITE_CANTOPEN);
		goto out_free;
	}
	sf->dir_unsynced = mode != ENV_READ;
	sf->delete_on_close = (flags & SQLITE_OPEN_DELETEONCLOSE) != 0;
	sf->frame_header_last = SQLITE_ENV_NO_FRAME;
	sf->frame_stale_from = SQLITE_ENV_NO_FRAME;
	if (flags & SQLITE_OPEN_WAL)
		sf->kind = SQLITE_ENV_WAL;
	if (flags & SQLITE_OPEN_MAIN_DB) {
		sf->kind = SQLITE_ENV_DB;
		if ((sf->page = bt_malloc(SQLITE_ENV_MAX_PAGE)) == NULL) {
			src = SQLITE_NOMEM;
			goto out_close;
		}
		if ((src = sqlite_env_db_learn(sf)) != SQLITE_OK)
			goto out_close;
	}
	file->pMethods = &sqlite_env_io_methods;
	if (out_flags != NULL)
		*out_flags = flags;
	return SQLITE_OK;
out_close:
	env_file_close(sf->f);
out_free:
	bt_free(sf->page);
	bt_free(sf->path);
	bt_free(sf->dir);
out:
	return src;
}

static int
sqlite_env_delete(sqlite3_vfs *vfs, const char *name, int sync_dir)
{
	struct sqlite_env *v = sqlite_env_of(vfs);
	int rc;

	if ((rc = env_path_remove(v->env, name)) < 0)
		return sqlite_env_error(v, rc, rc == -ENOENT ?
		    SQLITE_IOERR_DELETE_NOENT : SQLITE_IOERR_DELETE);
	if (sync_dir)
		return sqlite_env_dir_sync(v, name);
	return SQLITE_OK;
}

/*
 * Whether name exists.  As in SQLite's unix VFS, an empty file does not
 * "exist": an empty journal is not a hot one.  There are no permissions,
 * so a file that exists is readable and writable.
 */
static int
sqlite_env_access(sqlite3_vfs *vfs, const char *name, int flags, int *out)
{
	struct sqlite_env *v = sqlite_env_of(vfs);
	uint64_t size;
	int rc;

	rc = env_path_size(v->env, name, &size);
	if (rc == -ENOENT || rc == -ENOTDIR) {
		*out = 0;
		return SQLITE_OK;
	}
	if (rc < 0)
		return sqlite_env_error(v, rc, SQLITE_IOERR_ACCESS);
	*out = flags == SQLITE_ACCESS_EXISTS ? size > 0 : 1;
	return SQLITE_OK;
}

/* Env paths are their own name space: a name is its own full name. */
static int
sqlite_env_full_pathname(sqlite3_vfs *vfs, const char *name, int n_out,
    char *out)
{
	size_t n = strlen(name);

	if (n_out <= 0 || n >= (size_t)n_out)
		return SQLITE_CANTOPEN;
	memcpy(out, name, n + 1);
	return SQLITE_OK;
}

static void *
sqlite_env_dl_open(sqlite3_vfs *vfs, const char *name)
{
	struct sqlite_env *v = sqlite_env_of(vfs);

	return v->base->xDlOpen(v->base, name);
}

static void
sqlite_env_dl_error(sqlite3_vfs *vfs, int n, char *msg)
{
	struct sqlite_env *v = sqlite_env_of(vfs);

	v->base->xDlError(v->base, n, msg);
}

static void
(*sqlite_env_dl_sym(sqlite3_vfs *vfs, void *handle, const char *sym))(void)
{
	struct sqlite_env *v = sqlite_env_of(vfs);

	return v->base->xDlSym(v->base, handle, sym);
}

static void
sqlite_env_dl_close(sqlite3_vfs *vfs, void *handle)
{
	struct sqlite_env *v = sqlite_env_of(vfs);

	v->base->xDlClose(v->base, handle);
}

static int
sqlite_env_randomness(sqlite3_vfs *vfs, int n, char *out)
{
	struct sqlite_env *v = sqlite_env_of(vfs);

	return v->base->xRandomness(v->base, n, out);
}

static int
sqlite_env_sleep(sqlite3_vfs *vfs, int micros)
{
	struct sqlite_env *v = sqlite_env_of(vfs);

	return v->base->xSleep(v->base, micros);
}

static int
sqlite_env_current_time(sqlite3_vfs *vfs, double *out)
{
	struct sqlite_env *v = sqlite_env_of(vfs);

	return v->base->xCurrentTime(v->base, out);
}

static int
sqlite_env_current_time_int64(sqlite3_vfs *vfs, sqlite3_int64 *out)
{
	struct sqlite_env *v = sqlite_env_of(vfs);
	double days;
	int src;

	if (v->base->iVersion >= 2 && v->base->xCurrentTimeInt64 != NULL)
		return v->base->xCurrentTimeInt64(v->base, out);
	if ((src = v->base->xCurrentTime(v->base, &days)) == SQLITE_OK)
		*out = (sqlite3_int64)(days * 86400000.0);
	return src;
}

/*
 * The last failure's errno (the default VFS's would describe its own
 * calls, not ours), with the calling thread's detail as the message.
 */
static int
sqlite_env_get_last_error(sqlite3_vfs *vfs, int n, char *msg)
{
	struct sqlite_env *v = sqlite_env_of(vfs);

	if (n > 0)
		snprintf(msg, (size_t)n, "%s", bt_error_detail());
	return atomic_load_explicit(&v->last_errno, memory_order_relaxed);
}

int
sqlite_env_register(struct env *env, struct sqlite_env **out)
{
	struct sqlite_env *v;
	sqlite3_vfs *base;
	int src, rc;

	if ((src = sqlite3_initialize()) != SQLITE_OK) {
		rc = bt_error_set(src == SQLITE_NOMEM ? -ENOMEM : -EIO,
		    "sqlite env: initialize SQLite: %s", sqlite3_errstr(src));
		goto out;
	}
	if ((base = sqlite3_vfs_find(NULL)) == NULL) {
		rc = bt_error_set(-EIO,
		    "sqlite env: SQLite has no default VFS");
		goto out;
	}
	if ((v = bt_calloc(1, sizeof(*v))) == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	v->env = env;
	v->base = base;
	atomic_init(&v->last_errno, 0);
	snprintf(v->name, sizeof(v->name), "tabletfs-env-%" PRIxPTR,
	    (uintptr_t)v);
	v->vfs.iVersion = 2;
	v->vfs.szOsFile = (int)sizeof(struct sqlite_env_file);
	if (v->vfs.szOsFile < base->szOsFile)
		v->vfs.szOsFile = base->szOsFile;
	v->vfs.mxPathname = SQLITE_ENV_MAX_PATH;
	v->vfs.zName = v->name;
	v->vfs.pAppData = v;
	v->vfs.xOpen = sqlite_env_open;
	v->vfs.xDelete = sqlite_env_delete;
	v->vfs.xAccess = sqlite_env_access;
	v->vfs.xFullPathname = sqlite_env_full_pathname;
	v->vfs.xDlOpen = sqlite_env_dl_open;
	v->vfs.xDlError = sqlite_env_dl_error;
	v->vfs.xDlSym = sqlite_env_dl_sym;
	v->vfs.xDlClose = sqlite_env_dl_close;
	v->vfs.xRandomness = sqlite_env_randomness;
	v->vfs.xSleep = sqlite_env_sleep;
	v->vfs.xCurrentTime = sqlite_env_current_time;
	v->vfs.xGetLastError = sqlite_env_get_last_error;
	v->vfs.xCurrentTimeInt64 = sqlite_env_current_time_int64;
	if ((src = sqlite3_vfs_register(&v->vfs, 0)) != SQLITE_OK) {
		rc = bt_error_set(src == SQLITE_NOMEM ? -ENOMEM : -EIO,
		    "sqlite env: register %s: %s", v->name,
		    sqlite3_errstr(src));
		goto out_free;
	}
	*out = v;
	return 0;
out_free:
	bt_free(v);
out:
	return rc;
}

const char *
sqlite_env_name(const struct sqlite_env *v)
{
	return v->name;
}

void
sqlite_env_unregister(struct sqlite_env *v)
{
	if (v == NULL)
		return;
	sqlite3_vfs_unregister(&v->vfs);
	bt_free(v);
}

int
sqlite_env_check(struct sqlite_env *v, const char *path,
    void (*report)(void *arg, const char *problem), void *arg)
{
	struct sqlite_env_file sf;
	char line[128];
	uint64_t size, pages;
	size_t got;
	int rc, src, bad = 0;

	memset(&sf, 0, sizeof(sf));
	sf.owner = v;
	sf.path = (char *)path;
	if ((sf.page = bt_malloc(SQLITE_ENV_MAX_PAGE)) == NULL)
		return -ENOMEM;
	if ((rc = env_file_open(v->env, path, ENV_READ, &sf.f)) < 0)
		goto out_free;
	if ((rc = env_file_size(sf.f, &size)) < 0)
		goto out_close;
	if ((src = sqlite_env_db_learn(&sf)) != SQLITE_OK) {
		rc = atomic_load_explicit(&v->last_errno,
		    memory_order_relaxed);
		rc = src == SQLITE_IOERR_NOMEM ? -ENOMEM : rc > 0 ? -rc : -EIO;
		goto out_close;
	}
	if (sf.sums != SQLITE_ENV_SUMS_ON) {
		rc = 0;
		goto out_close;
	}
	pages = (size + sf.page_size - 1) / sf.page_size;
	for (uint64_t pgno = 1; pgno <= pages; pgno++) {
		if ((rc = env_file_read_at(sf.f, (pgno - 1) * sf.page_size,
		    sf.page, sf.page_size, &got)) < 0)
			goto out_close;
		if (got < sf.page_size)
			memset(sf.page + got, 0, sf.page_size - got);
		if (sqlite_env_page_sound(sf.page, sf.page_size, pgno))
			continue;
		bad++;
		if (report != NULL) {
			snprintf(line, sizeof(line), "page %" PRIu64 ": %s",
			    pgno, got < sf.page_size ? "cut short" :
			    "checksum mismatch");
			report(arg, line);
		}
	}
	rc = bad;
out_close:
	env_file_close(sf.f);
out_free:
	bt_free(sf.page);
	return rc;
}

/*
 * The frames of the WAL in f (size bytes, header h, page size ps): the
 * index of the first frame that is not sound, and whether a committed
 * transaction other than the one it may belong to follows it.  Such a
 * transaction was synced after the bad frame had been (every commit syncs
 * the WAL), so the bad frame is damage, not the torn end of a crash.
 * Evidence is a sound commit frame c after the bad one, then an unbroken
 * chain of sound frames from c to another commit frame that is not a
 * copy of c (SQLite pads a commit with copies of its last frame).
 */
static int
sqlite_env_wal_scan(struct sqlite_env *v, struct env_file *f, uint64_t size,
    const uint8_t *h, uint32_t ps, uint8_t *buf, uint64_t *bad,
    bool *proven)
{
	uint64_t frame = ps + SQLITE_ENV_FRAME_HEADER, n, k;
	uint8_t prev[8], commit[SQLITE_ENV_FRAME_HEADER + 8];
	uint8_t *c_page = NULL;
	bool chained = false;
	int rc = 0;

	*bad = SQLITE_ENV_NO_FRAME;
	*proven = false;
	n = (size - SQLITE_ENV_WAL_HEADER) / frame;
	memcpy(prev, h + 24, sizeof(prev));
	for (k = 0; k < n && !*proven; k++) {
		bool sound, is_commit;

		if ((rc = env_file_read_exact(f, SQLITE_ENV_WAL_HEADER +
		    k * frame, buf, (size_t)frame)) < 0)
			break;
		sound = sqlite_env_frame_sound(h, buf, buf +
		    SQLITE_ENV_FRAME_HEADER, ps, prev);
		memcpy(prev, buf + 16, sizeof(prev));
		if (*bad == SQLITE_ENV_NO_FRAME) {
			if (!sound)
				*bad = k;
			continue;
		}
		is_commit = sound && sqlite_env_get_be32(buf + 4) != 0;
		if (!sound) {
			chained = false;
		} else if (chained && is_commit &&
		    (memcmp(buf, commit, 8) != 0 ||
		    memcmp(buf + SQLITE_ENV_FRAME_HEADER, c_page, ps) != 0)) {
			*proven = true;
		} else if (is_commit && !chained) {
			if (c_page == NULL && (c_page = bt_malloc(ps)) == NULL) {
				rc = -ENOMEM;
				break;
			}
			memcpy(commit, buf, 8);
			memcpy(c_page, buf + SQLITE_ENV_FRAME_HEADER, ps);
			chained = true;
		}
	}
	bt_free(c_page);
	if (rc < 0)
		return sqlite_env_error(v, rc, SQLITE_IOERR_READ);
	return SQLITE_OK;
}

int
sqlite_env_wal_check(struct sqlite_env *v, const char *path)
{
	uint8_t h[SQLITE_ENV_WAL_HEADER], fh[SQLITE_ENV_FRAME_HEADER];
	struct env_file *f;
	uint8_t *buf = NULL;
	uint64_t size, bad;
	uint32_t ps;
	bool proven;
	int rc;

	if ((rc = env_file_open(v->env, path, ENV_READ, &f)) < 0)
		return rc == -ENOENT ? 0 : rc;
	if ((rc = env_file_size(f, &size)) < 0)
		goto out;
	if (size < SQLITE_ENV_WAL_HEADER + SQLITE_ENV_FRAME_HEADER)
		goto out;
	if ((rc = env_file_read_exact(f, 0, h, sizeof(h))) < 0)
		goto out;
	ps = sqlite_env_get_be32(h + 8);
	if ((sqlite_env_get_be32(h) & ~1u) != SQLITE_ENV_WAL_MAGIC ||
	    ps < SQLITE_ENV_MIN_PAGE || ps > SQLITE_ENV_MAX_PAGE ||
	    (ps & (ps - 1)) != 0)
		goto out;	/* SQLite ignores such a WAL */
	if ((buf = bt_malloc(ps + SQLITE_ENV_FRAME_HEADER)) == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	if (sqlite_env_wal_scan(v, f, size, h, ps, buf, &bad, &proven) !=
	    SQLITE_OK) {
		rc = atomic_load_explicit(&v->last_errno,
		    memory_order_relaxed);
		rc = rc > 0 ? -rc : -EIO;
		goto out;
	}
	if (proven) {
		rc = env_file_read_exact(f, SQLITE_ENV_WAL_HEADER + bad *
		    (ps + SQLITE_ENV_FRAME_HEADER), fh, sizeof(fh));
		rc = bt_error_set(BT_ECHECKSUM, "%s: frame %" PRIu64
		    " (page %" PRIu32 ") checksum mismatch, and committed "
		    "frames follow it", path, bad + 1,
		    rc == 0 ? sqlite_env_get_be32(fh) : 0);
	}
out:
	bt_free(buf);
	env_file_close(f);
	return rc;
}
