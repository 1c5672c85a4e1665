/* test_storage.c - a cell's storage, as its settings name it
 * (util/storage.h): what parses, into what, and what is refused with
 * one line. */
#include <errno.h>

#include "tap.h"
#include "util/error.h"
#include "util/storage.h"

struct good {
	const char *text;
	bool rados;
	const char *path, *pool, *conf, *client_id;
};

static const struct good goods[] = {
	{ "/srv/cell", false, "/srv/cell", "", "", "" },
	{ "rados://tabletfs", true, "/tabletfs", "tabletfs", "", "" },
	{ "rados://p/cell", true, "/cell", "p", "", "" },
	{ "rados://p/a/b.c_d-e", true, "/a/b.c_d-e", "p", "", "" },
	{ "rados://p?conf=/etc/ceph/ceph.conf", true, "/tabletfs", "p",
	  "/etc/ceph/ceph.conf", "" },
	{ "rados://p/c?id=tab&conf=/x/c.conf", true, "/c", "p", "/x/c.conf",
	  "tab" },
};

static const char *const bads[] = {
	"relative/dir", "", "s3://bucket", "rados://", "rados:///x",
	"rados://p/", "rados://p//x", "rados://p/..", "rados://p/./x",
	"rados://p q", "rados://p?", "rados://p?conf", "rados://p?conf=",
	"rados://p?conf=rel.conf", "rados://p?conf=/a%20b",
	"rados://p?conf=/a&conf=/b", "rados://p?id=a&id=b", "rados://p?id=",
	"rados://p?id=a/b", "rados://p?key=1", "rados://p?id=a&",
	"rados://0123456789012345678901234567890123456789012345678901234567890123",
};

int
main(void)
{
	struct storage st;

	for (size_t i = 0; i < sizeof(goods) / sizeof(goods[0]); i++) {
		const struct good *g = &goods[i];

		is_int(storage_parse(g->text, &st), 0, "%s parses", g->text);
		ok(st.rados == g->rados && strcmp(st.path, g->path) == 0 &&
		    strcmp(st.pool, g->pool) == 0 &&
		    strcmp(st.conf, g->conf) == 0 &&
		    strcmp(st.client_id, g->client_id) == 0,
		    "%s: path %s pool %s conf %s id %s", g->text, st.path,
		    st.pool, st.conf, st.client_id);
	}
	for (size_t i = 0; i < sizeof(bads) / sizeof(bads[0]); i++) {
		bt_error_clear();
		is_int(storage_parse(bads[i], &st), -EINVAL, "%s is refused",
		    bads[i]);
		ok(*bt_error_detail() != '\0' &&
		    strchr(bt_error_detail(), '\n') == NULL,
		    "  with one line: %s", bt_error_detail());
	}
	ok(storage_is_rados("rados://p") && !storage_is_rados("/rados://"),
	    "storage_is_rados looks at the scheme");
	return tap_done();
}
