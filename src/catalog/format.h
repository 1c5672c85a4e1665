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
 *     tablets   row ranges [start_row, end_row) of a table, and flushed_seq,
 *               the redo point of each
 *     files     SSTables named by a tablet, per locality group; a number may
 *               be named by more than one tablet (children of a split share
 *               their parent's files)
 *     meta      store-wide counters, key -> integer; CATALOG_META_LAST_NUMBER
 *               is the last file number handed out, "last_table_id" the
 *               highest table id ever given (table ids are never reused),
 *               "schema_version" raised by every schema change (catalog.h)
 *     pending_files  (version 5) file numbers handed to another tablet
 *               server that no tablet names yet, with that server's name
 * Removing a table removes its groups, families, tablets and their file rows
 * (ON DELETE CASCADE).
 *
 * Version 2 adds the location hierarchy (CATALOG_SCHEMA_V2_SQL, at the end of
 * this file) and each tablet's assigned server:
 *     tablets.server  the tablet server assigned to the tablet; '' unassigned
 *     tablets.auto_split  1 when start_row was chosen by a split for size
 *                     (such a boundary may be merged away again; split
 *                     rows a user gave are kept)
 *     meta            "last_tablet_id", the highest tablet id ever used:
 *                     ids are never reused, so a client's cached tablet id
 *                     names one tablet only
 *     meta_tablets    the METADATA table's own tablets: the root tablet
 *                     (parent_id NULL; it never splits) and the METADATA
 *                     tablets (parent_id = the root's id).  The rows with
 *                     parent_id = root ARE the root tablet's rows, one per
 *                     METADATA tablet, keyed by its end key
 *     locations       the METADATA tablets' rows, one per user tablet
 *     meta            "root_tablet" -> the root tablet's id (level 0)
 *
 * Version 3 has the schema of version 2 and checksums every page.  Its
 * header reserves CATALOG_PAGE_RESERVE bytes at the end of each page
 * (header byte 20, SQLite's "reserved space"), which SQLite leaves alone
 * and the VFS (sqlite_env.h) fills on every write of the database file:
 *     page[size - 8 .. size - 4)  the page number, 1-based, fixed32 LE
 *     page[size - 4 .. size)      masked CRC32C (util/crc32c.h) of
 *                                 page[0 .. size - 4)
 * and checks on every read.  Page images in the WAL keep whatever trailer
 * SQLite's buffer had (SQLite's own frame checksum covers the whole
 * image, and is what the VFS checks there); a checkpoint seals them as it
 * copies them into the database.  Before SQLite recovers a WAL left by a
 * crash, the VFS checks that no damaged frame is followed by a later
 * commit (sqlite_env_wal_check), which recovery would silently drop.  A
 * version-3 catalog whose header has another reserve is damaged
 * (BT_ECORRUPT).
 *
 * Version 4 adds access control (docs/design.md section 2,
 * "Permissions"; CATALOG_SCHEMA_V4_SQL): tables and families gain
 *     uid, gid   the owner and the group; -1 (CATALOG_ACCESS_STORE_OWNER)
 *                means the store's owner, whoever opens the store (its
 *                euid and egid), which is what rows that existed before
 *                the upgrade get
 *     mode       the permission bits, 0 to 0777 (r: read cells, w: write
 *                and delete them; x: kept, only the mount shows it);
 *                rows from before the upgrade get 0755
 * A new family takes its table's three.
 *
 * Version 5 adds the numbers a tablet server may still be about to name
 * (docs/design.md section 5, "The catalog served"; CATALOG_SCHEMA_V5_SQL):
 *     pending_files  number (the key), server ("HOST:PORT#EPOCH"): a file
 *                number given by catalog_next_number_for() to that
 *                server, which writes the SSTable in its own tmp/,
 *                renames it into sst/ and only then names it.  The
 *                number is live (catalog_file_is_live) while its row
 *                is here, so that the root's sweep of sst/ spares the
 *                file between its rename and its naming.  The row goes
 *                in the transaction that names the number in a tablet,
 *                or with every row of its server (catalog_server_gone).
 *
 * Version 6 marks the tablets whose records a dead server's log may
 * still hold (docs/design.md section 5, "Families made during a
 * recovery"; CATALOG_SCHEMA_V6_SQL):
 *     tablets.recovering  1 from the master's compare-and-set that gives
 *                the tablet to a server to recover it from the logs of
 *                the servers that are not live, until the master has
 *                seen that server serve it (the replayed records then
 *                flushed and under its flushed_seq); 0 otherwise
 *
 * Upgrades run at open, each crash-safe: 1 -> 2 in one transaction
 * (CATALOG_SCHEMA_V2_SQL); 2 -> 3 by VACUUM INTO CATALOG_UPGRADE_SUFFIX
 * beside the catalog with the reserve requested, user_version set to 3
 * there and synced, the old catalog closed (its WAL checkpointed and
 * removed, the directory synced), then the new file renamed over it: a
 * crash leaves the old catalog (and a stale copy that the next upgrade
 * removes first) or the new one; 3, 4 and 5 -> 6 in one transaction
 * each (CATALOG_SCHEMA_V4_SQL from 3, CATALOG_SCHEMA_V5_SQL from 3 and
 * 4, CATALOG_SCHEMA_V6_SQL, and user_version 6), so that a crash leaves
 * the old version or 6.
 */
#ifndef TABLETFS_CATALOG_FORMAT_H
#define TABLETFS_CATALOG_FORMAT_H

#define CATALOG_APPLICATION_ID	1952871267	/* 0x74667363, "tfsc" */
#define CATALOG_VERSION		6
/* The version that first reserves the page trailer. */
#define CATALOG_VERSION_RESERVE	3
/* Bytes at the end of every page for the trailer (version 3). */
#define CATALOG_PAGE_RESERVE	8
#define CATALOG_UPGRADE_SUFFIX	".v3"
#define CATALOG_META_LAST_NUMBER "last_number"
/* The id of a new tablet: above every id ever used (tablets_id_high keeps
 * meta "last_tablet_id"). */
#define CATALOG_TABLET_ID_NEXT_SQL \
	"(SELECT max(coalesce((SELECT max(id) FROM tablets), 0)," \
	" coalesce((SELECT value FROM meta WHERE key = 'last_tablet_id'), 0))" \
	" + 1)"

/* The id of a new table: above every id ever used, as for tablets, so
 * that a table dropped and made again under its name has another id
 * (a tablet server's log, replayed by table id and row, must never put
 * the old table's records in the new one).  meta CATALOG_META_LAST_TABLE_ID
 * holds the highest given; a catalog from before it has none, and its
 * next id is above the tables it has (no format change). */
#define CATALOG_META_LAST_TABLE_ID "last_table_id"
#define CATALOG_TABLE_ID_NEXT_SQL \
	"(SELECT max(coalesce((SELECT max(id) FROM tables), 0)," \
	" coalesce((SELECT value FROM meta WHERE key = '" \
	CATALOG_META_LAST_TABLE_ID "'), 0)) + 1)"

/* The version-1 schema, unchanged; version 2 adds CATALOG_SCHEMA_V2_SQL
 * (below), which is also the whole upgrade from version 1. */
#define CATALOG_SCHEMA_V1_SQL \
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

/*
 * The location hierarchy (version 2), Bigtable's three levels:
 *   level 0  meta "root_tablet": the root tablet's id (the paper's Chubby
 *            file);
 *   level 1  the root tablet: a meta_tablets row per METADATA tablet M,
 *            keyed by M's end key;
 *   level 2  a METADATA tablet: a locations row per user tablet, keyed by
 *            (table_id, is_last, end_row): is_last is 1 for the tablet
 *            running to the end of its table (end_row x''), so that it
 *            sorts after every finite end of the table.
 * Keys compare as SQLite row values; the largest key, CATALOG_KEY_MAX_SQL
 * (a table id no table has), ends the last METADATA tablet.  A METADATA
 * tablet M covers the location keys (end of the previous M, end of M].
 * The tablet holding row r of table t has the first location key above
 * (t, 0, r); it lives in the METADATA tablet with the first end above
 * (t, 0, r), because no METADATA end lies strictly inside a tablet's span
 * ((t, 0, start_row), its key) -- the triggers keep it so.
 *
 * The triggers keep the hierarchy exactly in step with `tablets`, in the
 * same transaction as every change to it:
 *   - a tablet inserted (or its range updated) gets its location row in
 *     the METADATA tablet covering its key; a METADATA end left inside
 *     the new tablet's span (a merge across a METADATA boundary, a table
 *     id used again) moves down to (t, 0, start_row), and METADATA
 *     tablets left with an empty range are dropped;
 *   - a tablet deleted (also by a table's cascade) loses its row;
 *   - tablets.server is copied to its location row;
 *   - row_count follows the rows of each METADATA tablet; one that passes
 *     meta "metadata_tablet_rows" (default CATALOG_METADATA_TABLET_ROWS,
 *     at least 2) splits at its middle row: a new METADATA tablet, ending
 *     at that row's key, takes the lower half.  A METADATA tablet left
 *     with no rows is dropped, its range joining the next one (the last
 *     stays): METADATA tablets merge only when empty.
 * Callers must delete replaced tablets before inserting their successors
 * (a location key is unique), as catalog_tablet_replace() does.
 */
#define CATALOG_META_ROOT_TABLET "root_tablet"
#define CATALOG_META_METADATA_ROWS "metadata_tablet_rows"
#define CATALOG_METADATA_TABLET_ROWS 1000
#define CATALOG_KEY_MAX_TABLE "9223372036854775807"

#define CATALOG_SQL_STR2_(x) #x
#define CATALOG_SQL_STR_(x) CATALOG_SQL_STR2_(x)
#define CATALOG_ROOT_SQL_ \
	"(SELECT value FROM meta WHERE key = '" CATALOG_META_ROOT_TABLET "')"
#define CATALOG_END_SQL_ "(end_table, end_last, end_row)"
#define CATALOG_LO_SQL_ "(NEW.table_id, 0, NEW.start_row)"
#define CATALOG_HI_SQL_ \
	"(NEW.table_id, length(NEW.end_row) = 0, NEW.end_row)"

/* The body shared by the insert and update triggers of `tablets`. */
#define CATALOG_LOCATION_ADD_SQL_ \
	" UPDATE meta_tablets SET end_table = NEW.table_id, end_last = 0,\n" \
	"     end_row = NEW.start_row\n" \
	"  WHERE id = (SELECT id FROM meta_tablets\n" \
	"     WHERE parent_id = " CATALOG_ROOT_SQL_ "\n" \
	"     AND " CATALOG_END_SQL_ " > " CATALOG_LO_SQL_ "\n" \
	"     AND " CATALOG_END_SQL_ " < " CATALOG_HI_SQL_ "\n" \
	"     ORDER BY end_table, end_last, end_row LIMIT 1)\n" \
	"  AND NOT EXISTS (SELECT 1 FROM meta_tablets\n" \
	"     WHERE parent_id = " CATALOG_ROOT_SQL_ "\n" \
	"     AND " CATALOG_END_SQL_ " = " CATALOG_LO_SQL_ ");\n" \
	" DELETE FROM meta_tablets WHERE parent_id = " CATALOG_ROOT_SQL_ "\n" \
	"     AND " CATALOG_END_SQL_ " > " CATALOG_LO_SQL_ "\n" \
	"     AND " CATALOG_END_SQL_ " < " CATALOG_HI_SQL_ ";\n" \
	" INSERT INTO locations\n" \
	"     (tablet_id, meta_id, table_id, is_last, end_row, start_row,\n" \
	"     server)\n" \
	"  VALUES (NEW.id, (SELECT id FROM meta_tablets\n" \
	"     WHERE parent_id = " CATALOG_ROOT_SQL_ "\n" \
	"     AND " CATALOG_END_SQL_ " >= " CATALOG_HI_SQL_ "\n" \
	"     ORDER BY end_table, end_last, end_row LIMIT 1),\n" \
	"   NEW.table_id, length(NEW.end_row) = 0, NEW.end_row,\n" \
	"   NEW.start_row, NEW.server);\n"

#define CATALOG_SCHEMA_V2_SQL \
	"ALTER TABLE tablets ADD COLUMN server TEXT NOT NULL DEFAULT '';\n" \
	"ALTER TABLE tablets ADD COLUMN auto_split INTEGER NOT NULL\n" \
	"    DEFAULT 0;\n" \
	"CREATE TRIGGER tablets_id_high AFTER INSERT ON tablets BEGIN\n" \
	"	INSERT INTO meta (key, value) VALUES ('last_tablet_id', NEW.id)\n" \
	"	    ON CONFLICT (key) DO UPDATE\n" \
	"	    SET value = max(value, excluded.value);\n" \
	"END;\n" \
	"CREATE TABLE meta_tablets (\n" \
	"	id INTEGER PRIMARY KEY,\n" \
	"	parent_id INTEGER,\n" \
	"	end_table INTEGER NOT NULL,\n" \
	"	end_last INTEGER NOT NULL,\n" \
	"	end_row BLOB NOT NULL,\n" \
	"	row_count INTEGER NOT NULL DEFAULT 0,\n" \
	"	server TEXT NOT NULL DEFAULT '',\n" \
	"	UNIQUE (parent_id, end_table, end_last, end_row)\n" \
	");\n" \
	"CREATE TABLE locations (\n" \
	"	tablet_id INTEGER PRIMARY KEY,\n" \
	"	meta_id INTEGER NOT NULL REFERENCES meta_tablets(id)\n" \
	"	    DEFERRABLE INITIALLY DEFERRED,\n" \
	"	table_id INTEGER NOT NULL,\n" \
	"	is_last INTEGER NOT NULL,\n" \
	"	end_row BLOB NOT NULL,\n" \
	"	start_row BLOB NOT NULL,\n" \
	"	server TEXT NOT NULL,\n" \
	"	UNIQUE (table_id, is_last, end_row)\n" \
	");\n" \
	"CREATE INDEX locations_meta\n" \
	"    ON locations (meta_id, table_id, is_last, end_row);\n" \
	"CREATE INDEX tablets_server ON tablets (server);\n" \
	"INSERT INTO meta_tablets (parent_id, end_table, end_last, end_row)\n" \
	"    VALUES (NULL, " CATALOG_KEY_MAX_TABLE ", 1, x'');\n" \
	"INSERT INTO meta (key, value)\n" \
	"    VALUES ('" CATALOG_META_ROOT_TABLET "', last_insert_rowid());\n" \
	"INSERT INTO meta_tablets (parent_id, end_table, end_last, end_row)\n" \
	"    VALUES (" CATALOG_ROOT_SQL_ ",\n" \
	"    " CATALOG_KEY_MAX_TABLE ", 1, x'');\n" \
	"CREATE TRIGGER tablets_location_insert AFTER INSERT ON tablets\n" \
	"BEGIN\n" CATALOG_LOCATION_ADD_SQL_ "END;\n" \
	"CREATE TRIGGER tablets_location_update\n" \
	"    AFTER UPDATE OF id, table_id, start_row, end_row ON tablets\n" \
	"BEGIN\n" \
	" DELETE FROM locations WHERE tablet_id = OLD.id;\n" \
	CATALOG_LOCATION_ADD_SQL_ "END;\n" \
	"CREATE TRIGGER tablets_location_delete AFTER DELETE ON tablets\n" \
	"BEGIN\n" \
	" DELETE FROM locations WHERE tablet_id = OLD.id;\n" \
	"END;\n" \
	"CREATE TRIGGER tablets_location_server\n" \
	"    AFTER UPDATE OF server ON tablets\n" \
	"BEGIN\n" \
	" UPDATE locations SET server = NEW.server\n" \
	"     WHERE tablet_id = NEW.id;\n" \
	"END;\n" \
	"CREATE TRIGGER locations_count_insert AFTER INSERT ON locations\n" \
	"BEGIN\n" \
	" UPDATE meta_tablets SET row_count = row_count + 1\n" \
	"     WHERE id = NEW.meta_id;\n" \
	"END;\n" \
	"CREATE TRIGGER locations_count_delete AFTER DELETE ON locations\n" \
	"BEGIN\n" \
	" UPDATE meta_tablets SET row_count = row_count - 1\n" \
	"     WHERE id = OLD.meta_id;\n" \
	"END;\n" \
	"CREATE TRIGGER locations_count_move\n" \
	"    AFTER UPDATE OF meta_id ON locations\n" \
	"BEGIN\n" \
	" UPDATE meta_tablets SET row_count = row_count - 1\n" \
	"     WHERE id = OLD.meta_id;\n" \
	" UPDATE meta_tablets SET row_count = row_count + 1\n" \
	"     WHERE id = NEW.meta_id;\n" \
	"END;\n" \
	"CREATE TRIGGER meta_tablets_split AFTER UPDATE OF row_count\n" \
	"    ON meta_tablets WHEN NEW.parent_id IS NOT NULL\n" \
	"    AND NEW.row_count > max(2, coalesce((SELECT value FROM meta\n" \
	"     WHERE key = '" CATALOG_META_METADATA_ROWS "'),\n" \
	"     " CATALOG_SQL_STR_(CATALOG_METADATA_TABLET_ROWS) "))\n" \
	"BEGIN\n" \
	" INSERT INTO meta_tablets\n" \
	"     (parent_id, end_table, end_last, end_row, server)\n" \
	"  SELECT NEW.parent_id, table_id, is_last, end_row, NEW.server\n" \
	"     FROM locations WHERE meta_id = NEW.id\n" \
	"     ORDER BY table_id, is_last, end_row\n" \
	"     LIMIT 1 OFFSET NEW.row_count / 2 - 1;\n" \
	" UPDATE locations SET meta_id = last_insert_rowid()\n" \
	"  WHERE meta_id = NEW.id AND (table_id, is_last, end_row) <=\n" \
	"     (SELECT end_table, end_last, end_row FROM meta_tablets\n" \
	"      WHERE id = last_insert_rowid());\n" \
	"END;\n" \
	"CREATE TRIGGER meta_tablets_empty AFTER UPDATE OF row_count\n" \
	"    ON meta_tablets WHEN NEW.parent_id IS NOT NULL\n" \
	"    AND NEW.row_count = 0\n" \
	"    AND NEW.end_table != " CATALOG_KEY_MAX_TABLE "\n" \
	"BEGIN\n" \
	" DELETE FROM meta_tablets WHERE id = NEW.id;\n" \
	"END;\n"

/* Version 4: owners, groups and modes (the whole upgrade from 3). */
#define CATALOG_SCHEMA_V4_SQL \
	"ALTER TABLE tables ADD COLUMN uid INTEGER NOT NULL DEFAULT -1;\n" \
	"ALTER TABLE tables ADD COLUMN gid INTEGER NOT NULL DEFAULT -1;\n" \
	"ALTER TABLE tables ADD COLUMN mode INTEGER NOT NULL DEFAULT 493;\n" \
	"ALTER TABLE families ADD COLUMN uid INTEGER NOT NULL DEFAULT -1;\n" \
	"ALTER TABLE families ADD COLUMN gid INTEGER NOT NULL DEFAULT -1;\n" \
	"ALTER TABLE families ADD COLUMN mode INTEGER NOT NULL\n" \
	"    DEFAULT 493;\n"

/* Version 5: the pending file numbers (the whole upgrade from 4). */
#define CATALOG_SCHEMA_V5_SQL \
	"CREATE TABLE pending_files (\n" \
	"	number INTEGER PRIMARY KEY,\n" \
	"	server TEXT NOT NULL\n" \
	");\n" \
	"CREATE INDEX pending_files_server ON pending_files (server);\n"

/* Version 6: the recovery marks (the whole upgrade from 5). */
#define CATALOG_SCHEMA_V6_SQL \
	"ALTER TABLE tablets ADD COLUMN recovering INTEGER NOT NULL\n" \
	"    DEFAULT 0;\n"

#define CATALOG_SCHEMA_SQL \
	CATALOG_SCHEMA_V1_SQL CATALOG_SCHEMA_V2_SQL CATALOG_SCHEMA_V4_SQL \
	CATALOG_SCHEMA_V5_SQL CATALOG_SCHEMA_V6_SQL

#endif
