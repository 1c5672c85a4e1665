/*
 * catalog/format.h - the catalog database, STORE/catalog.db (also in
 * tabletfs(5)).
 *
 * A SQLite 3 database in WAL mode.  Its header carries
 *     PRAGMA application_id = CATALOG_APPLICATION_ID   ("tfsc")
 *     PRAGMA user_version   = CATALOG_VERSION
 * and a catalog with any other pair is refused (BT_EFORMAT).  Integers that
 * are uint64_t in C are stored as SQLite's signed 64-bit INTEGER (the same
 * bits); ordering in SQL (file numbers, the sequence numbers of
 * log redo points) assumes values below 2^63.  Row keys are BLOBs, which
 * SQLite orders as memcmp then length, exactly as slice_compare does; the
 * empty BLOB as a tablet's start means the beginning of the table, as its
 * end the end of the table.
 *
 * Tables (CATALOG_SCHEMA_SQL below is the definition):
 *     tables    one row per table: id, unique name, tablet_size in bytes
 *     groups    locality groups of a table, (table_id, name) unique; every
 *               table has CATALOG_DEFAULT_GROUP
 *     families  column families: (table_id, name) unique, the group they
 *               are stored in, their GC policy text (gc_policy.h), and
 *               created_seq, the first sequence number of their life, so
 *               that data of a dropped family of the same name stays gone
 *     tablets   row ranges [start_row, end_row) of a table, flushed_seq,
 *               the redo point of each, and auto_split: 1 when start_row
 *               was chosen by a split for size (such a boundary may be
 *               merged away again; split rows a user gave are kept)
 *     files     SSTables named by a tablet, per locality group; a number may
 *               be named by more than one tablet (children of a split share
 *               their parent's files)
 *     meta      store-wide counters, key -> integer; CATALOG_META_LAST_NUMBER
 *               is the last file number handed out
 * Removing a table removes its groups, families, tablets and their file rows
 * (ON DELETE CASCADE).
 */
#ifndef TABLETFS_CATALOG_FORMAT_H
#define TABLETFS_CATALOG_FORMAT_H

#define CATALOG_APPLICATION_ID	1952871267	/* 0x74667363, "tfsc" */
#define CATALOG_VERSION		1
#define CATALOG_META_LAST_NUMBER "last_number"

#define CATALOG_SCHEMA_SQL \
	"CREATE TABLE tables (\n" \
	"	id INTEGER PRIMARY KEY,\n" \
	"	name TEXT NOT NULL UNIQUE,\n" \
	"	tablet_size INTEGER NOT NULL\n" \
	");\n" \
	"CREATE TABLE groups (\n" \
	"	table_id INTEGER NOT NULL\n" \
	"	    REFERENCES tables(id) ON DELETE CASCADE,\n" \
	"	name TEXT NOT NULL,\n" \
	"	block_size INTEGER NOT NULL,\n" \
	"	compress INTEGER NOT NULL,\n" \
	"	bloom INTEGER NOT NULL,\n" \
	"	in_memory INTEGER NOT NULL,\n" \
	"	PRIMARY KEY (table_id, name)\n" \
	") WITHOUT ROWID;\n" \
	"CREATE TABLE families (\n" \
	"	table_id INTEGER NOT NULL\n" \
	"	    REFERENCES tables(id) ON DELETE CASCADE,\n" \
	"	name TEXT NOT NULL,\n" \
	"	group_name TEXT NOT NULL,\n" \
	"	gc_policy TEXT NOT NULL,\n" \
	"	created_seq INTEGER NOT NULL DEFAULT 0,\n" \
	"	PRIMARY KEY (table_id, name),\n" \
	"	FOREIGN KEY (table_id, group_name)\n" \
	"	    REFERENCES groups(table_id, name) ON DELETE CASCADE\n" \
	") WITHOUT ROWID;\n" \
	"CREATE TABLE tablets (\n" \
	"	id INTEGER PRIMARY KEY,\n" \
	"	table_id INTEGER NOT NULL\n" \
	"	    REFERENCES tables(id) ON DELETE CASCADE,\n" \
	"	start_row BLOB NOT NULL,\n" \
	"	end_row BLOB NOT NULL,\n" \
	"	flushed_seq INTEGER NOT NULL,\n" \
	"	auto_split INTEGER NOT NULL DEFAULT 0,\n" \
	"	UNIQUE (table_id, start_row)\n" \
	");\n" \
	"CREATE TABLE files (\n" \
	"	tablet_id INTEGER NOT NULL\n" \
	"	    REFERENCES tablets(id) ON DELETE CASCADE,\n" \
	"	number INTEGER NOT NULL,\n" \
	"	group_name TEXT NOT NULL,\n" \
	"	size INTEGER NOT NULL,\n" \
	"	entry_count INTEGER NOT NULL,\n" \
	"	max_seq INTEGER NOT NULL,\n" \
	"	PRIMARY KEY (tablet_id, number)\n" \
	") WITHOUT ROWID;\n" \
	"CREATE INDEX files_number ON files(number);\n" \
	"CREATE TABLE meta (\n" \
	"	key TEXT PRIMARY KEY,\n" \
	"	value INTEGER NOT NULL\n" \
	") WITHOUT ROWID;\n"

#endif
