/*
 * fuzz_service.c - a tablet server's request dispatch (service_handle,
 * src/tabletd/service.c) on any bytes: the first input byte is the method
 * number (a Tabletfs__Method, or one that is not), the rest the request
 * payload.  The request runs on a store in
 * an in-memory env that holds a table "t" (families f and g) with a few
 * rows; the store lives across inputs, as a server's does, and is made
 * afresh every STORE_RUNS inputs so that memory stays bounded.
 *
 * Properties: a request succeeds with a reply that unpacks as the
 * method's reply message (nothing for Empty), or fails with a negative
 * code and a one-line printable message; the store still lists its
 * tables afterwards.
 */
#include <errno.h>
#include <string.h>

#include "api/tabletfs.h"
#include "fuzz.h"
#include "rpc/tabletfs.pb-c.h"
#include "tabletd/service.h"
#include "util/env.h"

#define STORE_RUNS	2000

/* The reply message of each method the service serves. */
static const struct {
	uint32_t method;
	const ProtobufCMessageDescriptor *reply;	/* NULL: Empty */
} methods[] = {
	{ TABLETFS__METHOD__TABLE_CREATE, NULL },
	{ TABLETFS__METHOD__TABLE_DELETE, NULL },
	{ TABLETFS__METHOD__TABLE_LIST,
	    &tabletfs__table_list_reply__descriptor },
	{ TABLETFS__METHOD__FAMILY_CREATE, NULL },
	{ TABLETFS__METHOD__FAMILY_DELETE, NULL },
	{ TABLETFS__METHOD__FAMILY_SET_GC, NULL },
	{ TABLETFS__METHOD__GROUP_SET, NULL },
	{ TABLETFS__METHOD__TABLE_DESCRIBE,
	    &tabletfs__describe_reply__descriptor },
	{ TABLETFS__METHOD__TABLE_ACCESS,
	    &tabletfs__access_reply__descriptor },
	{ TABLETFS__METHOD__ACCESS_SET, NULL },
	{ TABLETFS__METHOD__MUTATE_ROW,
	    &tabletfs__mutate_row_reply__descriptor },
	{ TABLETFS__METHOD__MUTATE_ROWS,
	    &tabletfs__mutate_rows_reply__descriptor },
	{ TABLETFS__METHOD__READ_MODIFY_WRITE,
	    &tabletfs__read_modify_write_reply__descriptor },
	{ TABLETFS__METHOD__MOVE_COLUMN, NULL },
	{ TABLETFS__METHOD__READ_ROW, &tabletfs__read_row_reply__descriptor },
	{ TABLETFS__METHOD__SCAN, &tabletfs__scan_reply__descriptor },
	{ TABLETFS__METHOD__SCAN_CLOSE, NULL },
	{ TABLETFS__METHOD__FLUSH, NULL },
	{ TABLETFS__METHOD__SCHEMA_SYNC, NULL },
	{ TABLETFS__METHOD__COMPACT, NULL },
	{ TABLETFS__METHOD__SPLIT, NULL },
	{ TABLETFS__METHOD__TABLETS, &tabletfs__tablets_reply__descriptor },
	{ TABLETFS__METHOD__CHECK, &tabletfs__check_reply__descriptor },
	{ TABLETFS__METHOD__STATS, &tabletfs__stats__descriptor },
	{ TABLETFS__METHOD__TABLE_USAGE,
	    &tabletfs__usage_reply__descriptor },
	{ TABLETFS__METHOD__BULK_OPEN,
	    &tabletfs__bulk_open_reply__descriptor },
	{ TABLETFS__METHOD__BULK_PUT, NULL },
	{ TABLETFS__METHOD__BULK_COMMIT,
	    &tabletfs__bulk_commit_reply__descriptor },
	{ TABLETFS__METHOD__BULK_ABORT, NULL },
	{ TABLETFS__METHOD__LAST_SEQ, &tabletfs__last_seq_reply__descriptor },
	{ TABLETFS__METHOD__SPACE, &tabletfs__space_reply__descriptor },
	{ TABLETFS__METHOD__CATALOG_TABLE_GET,
	    &tabletfs__catalog_table_reply__descriptor },
	{ TABLETFS__METHOD__CATALOG_TABLE_GET_BY_ID,
	    &tabletfs__catalog_table_reply__descriptor },
	{ TABLETFS__METHOD__CATALOG_TABLE_LIST,
	    &tabletfs__table_list_reply__descriptor },
	{ TABLETFS__METHOD__CATALOG_TABLETS_LIST,
	    &tabletfs__catalog_tablets_reply__descriptor },
	{ TABLETFS__METHOD__CATALOG_FILES_LIST,
	    &tabletfs__catalog_files_reply__descriptor },
	{ TABLETFS__METHOD__CATALOG_NEXT_NUMBER,
	    &tabletfs__catalog_number_reply__descriptor },
	{ TABLETFS__METHOD__CATALOG_TABLET_APPLY, NULL },
	{ TABLETFS__METHOD__CATALOG_FILE_IS_LIVE,
	    &tabletfs__catalog_live_reply__descriptor },
	{ TABLETFS__METHOD__CATALOG_SCHEMA_VERSION,
	    &tabletfs__catalog_version_reply__descriptor },
	{ TABLETFS__METHOD__CATALOG_TABLET_REPLACE,
	    &tabletfs__catalog_replace_reply__descriptor },
	{ TABLETFS__METHOD__CATALOG_ASSIGN, NULL },
	{ TABLETFS__METHOD__CATALOG_ASSIGNMENTS,
	    &tabletfs__catalog_assignments_reply__descriptor },
	{ TABLETFS__METHOD__CATALOG_SERVER_GONE, NULL },
	{ TABLETFS__METHOD__LOCATE, &tabletfs__locate_reply__descriptor },
};
#define METHODS	(sizeof(methods) / sizeof(methods[0]))

static struct env *env;
static struct bt_store *store;
static struct service *svc;
static long runs;

static void
fixture_close(void)
{
	service_free(svc);
	FUZZ_CHECK(bt_store_close(store) == 0);
	env_free(env);
	svc = NULL;
	store = NULL;
	env = NULL;
}

/* A fresh store with table t and three rows, and a service on it. */
static void
fixture_open(void)
{
	static const struct bt_family_spec fams[] = {
		{ "f", NULL, NULL }, { "g", NULL, "maxversions=2" },
	};
	struct bt_options opts = { 0 };
	struct bt_mutation m = { BT_PUT, "f", { "q", 1 }, 5, { "12\n", 3 } };
	struct bt_bytes row;

	FUZZ_CHECK(env_fault_new(&env) == 0);
	opts.env = env;
	FUZZ_CHECK(env_dir_create(env, "/store") == 0);
	FUZZ_CHECK(bt_store_create("/store", &opts) == 0);
	FUZZ_CHECK(bt_store_open("/store", &opts, &store) == 0);
	FUZZ_CHECK(bt_table_create(store, "t", fams, 2, NULL, 0, 0) == 0);
	for (const char *r = "a\0b\0c\0"; *r != '\0'; r += 2) {
		row.data = r;
		row.size = 1;
		FUZZ_CHECK(bt_mutate_row(store, "t", row, &m, 1, NULL,
		    NULL) == 0);
	}
	FUZZ_CHECK(service_new(store, &svc) == 0);
}

/* At exit, so that leak checkers see the fixture freed. */
static void
fixture_exit(void)
{
	if (store != NULL)
		fixture_close();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const ProtobufCMessageDescriptor *d = NULL;
	uint32_t method;
	bool served = false;
	ProtobufCMessage *m;
	struct buf reply;
	char **names;
	size_t count;
	int rc;

	if (size == 0)
		return 0;
	method = data[0];
	if (store != NULL && ++runs % STORE_RUNS == 0)
		fixture_close();
	if (store == NULL) {
		if (runs == 0)
			atexit(fixture_exit);
		fixture_open();
	}
	for (size_t i = 0; i < METHODS; i++) {
		if (methods[i].method == method) {
			served = true;
			d = methods[i].reply;
		}
	}
	buf_init(&reply);
	rc = service_handle(svc, method, slice_make(data + 1, size - 1),
	    &reply);
	if (rc == 0) {
		FUZZ_CHECK(served);
		if (d == NULL) {
			FUZZ_CHECK(reply.n == 0);
		} else {
			m = protobuf_c_message_unpack(d, NULL, reply.n,
			    reply.p);
			FUZZ_CHECK(m != NULL);
			protobuf_c_message_free_unpacked(m, NULL);
		}
	} else {
		FUZZ_CHECK(rc < 0);
		FUZZ_CHECK(served || rc == -ENOSYS);
		FUZZ_CHECK(reply.n > 0);
		for (size_t i = 0; i < reply.n; i++)
			FUZZ_CHECK(reply.p[i] >= 0x20 && reply.p[i] < 0x7f);
	}
	buf_release(&reply);
	FUZZ_CHECK(bt_table_list(store, &names, &count) == 0);
	bt_names_free(names);
	return 0;
}
