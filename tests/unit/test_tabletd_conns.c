/*
 * test_tabletd_conns.c - the master's kept connections (tabletd.h,
 * struct tabletd_conns), against an RPC server on loopback that says
 * which connection each call came on.
 *
 * Proves: calls to one address share one connection, from one thread
 * and from several at once; a server's error status keeps it; a call
 * whose reply does not come by its deadline closes it, and the next call
 * opens another; so does the server leaving the live set, and its coming
 * back under another name (a restart); the results are tabletd_call()'s.
 * A call waiting on a server that never answers, on a kept connection or
 * on one of its own, returns -ECONNABORTED as soon as the server is
 * abandoned (its session ended), while the server still holds it; a
 * server still registered is not abandoned.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>

#include "rpc/rpc.h"
#include "rpc/tabletfs.pb-c.h"
#include "tabletd/tabletd.h"
#include "tap.h"
#include "util/error.h"

#define METHOD_OK	1
#define METHOD_BUSY	2
#define METHOD_SLOW	3
#define METHOD_HANG	4	/* answers once released (or in 10 s) */

#define must(expr) do {						\
	if ((expr) < 0)							\
		tap_bail(#expr);					\
} while (0)

static uint8_t secret[RPC_SECRET_SIZE];
static _Atomic uint64_t last_conn, max_conn;
static atomic_bool hang_released;
static atomic_int hanging;

static int
handle(void *arg, const struct rpc_call *call, struct slice request,
    struct buf *reply)
{
	(void)arg;
	(void)request;
	(void)reply;
	uint64_t seen = atomic_load(&max_conn);

	atomic_store(&last_conn, call->conn);
	while (call->conn > seen &&
	    !atomic_compare_exchange_weak(&max_conn, &seen, call->conn))
		;
	if (call->method == METHOD_BUSY)
		return -EBUSY;
	if (call->method == METHOD_SLOW)
		usleep(300 * 1000);
	if (call->method == METHOD_HANG) {
		atomic_fetch_add(&hanging, 1);
		for (int i = 0; i < 1000 && !atomic_load(&hang_released); i++)
			usleep(10 * 1000);
		atomic_fetch_sub(&hanging, 1);
	}
	return 0;
}

/* Call method at address; the connection it came on, or 0 when the
 * call failed (its result in *rc). */
static uint64_t
conn_of(struct tabletd_conns *c, const char *address, uint32_t method,
    int64_t timeout_ms, int *rc)
{
	Tabletfs__TabletRequest req = TABLETFS__TABLET_REQUEST__INIT;
	int64_t now = rpc_now_ns();

	atomic_store(&last_conn, 0);
	*rc = tabletd_conns_call(c, address, method, &req.base,
	    now + 2000 * 1000000ll, now + timeout_ms * 1000000, NULL, NULL);
	return *rc == 0 || *rc == -EBUSY ? atomic_load(&last_conn) : 0;
}

struct caller {
	struct tabletd_conns *c;
	const char *address;
	int answered;
};

static void *
caller_run(void *arg)
{
	struct caller *k = arg;
	int rc;

	for (int i = 0; i < 20; i++) {
		(void)conn_of(k->c, k->address, METHOD_OK, 2000, &rc);
		k->answered += rc == 0;
	}
	return NULL;
}

struct hung {
	struct tabletd_conns *c;
	const char *address;
	bool own;		/* over a connection of the call's own */
	int rc;
	int still_hanging;	/* the handler's, when the call returned */
};

static void *
hung_run(void *arg)
{
	Tabletfs__TabletRequest req = TABLETFS__TABLET_REQUEST__INIT;
	struct hung *h = arg;
	int64_t now = rpc_now_ns();

	h->rc = (h->own ? tabletd_conns_call_own : tabletd_conns_call)(h->c,
	    h->address, METHOD_HANG, &req.base, now + 2000 * 1000000ll,
	    now + 30000 * 1000000ll, NULL, NULL);
	h->still_hanging = atomic_load(&hanging);
	return NULL;
}

/* A call of METHOD_HANG (own connection or kept) abandoned while the
 * handler holds it, with address listed or not. */
static void
test_abandon(struct tabletd_conns *c, const char *address, bool own)
{
	const char *how = own ? "its own connection" : "a kept connection";
	char *listed[1] = { (char *)address };
	struct hung h = { .c = c, .address = address, .own = own };
	pthread_t t;
	size_t aborted;

	atomic_store(&hang_released, false);
	if (pthread_create(&t, NULL, hung_run, &h) != 0)
		tap_bail("pthread_create");
	while (atomic_load(&hanging) == 0)
		usleep(1000);
	is_int(tabletd_conns_abandon(c, listed, 1), 0, "%s: the server "
	    "still registered: nothing aborted", how);
	usleep(100 * 1000);
	aborted = tabletd_conns_abandon(c, NULL, 0);
	pthread_join(t, NULL);
	is_int(aborted, 1, "%s: the server no longer registered: its "
	    "connection aborted", how);
	is_int(h.rc, -ECONNABORTED, "%s: the waiting call returns "
	    "-ECONNABORTED", how);
	is_int(h.still_hanging, 1, "%s: while the server still held it", how);
	atomic_store(&hang_released, true);
	while (atomic_load(&hanging) > 0)
		usleep(1000);
}

int
main(void)
{
	struct rpc_server_options o = { .secret = secret };
	struct tabletd_live live = { .epoch = 1 };
	struct caller callers[4];
	pthread_t threads[4];
	struct tabletd_conns *c;
	struct rpc_server *s;
	const char *address;
	uint64_t first, again;
	int rc, same = 0;

	for (size_t i = 0; i < sizeof(secret); i++)
		secret[i] = (uint8_t)(i * 5 + 3);
	if (rpc_server_open("127.0.0.1:0", &o, handle, NULL, &s) < 0)
		tap_bail("rpc_server_open");
	address = rpc_server_address(s);
	snprintf(live.address, sizeof(live.address), "%s", address);
	snprintf(live.name, sizeof(live.name), "%s#1", address);
	must(tabletd_conns_new(secret, &c));
	must(tabletd_conns_retain(c, &live, 1));

	first = conn_of(c, address, METHOD_OK, 2000, &rc);
	ok(rc == 0 && first != 0, "a call over a kept connection (%d)", rc);
	again = conn_of(c, address, METHOD_OK, 2000, &rc);
	is_int(again, first, "the next call goes over the same connection");
	again = conn_of(c, address, METHOD_BUSY, 2000, &rc);
	is_int(rc, -EBUSY, "a server's status is the call's result");
	is_int(again, first, "and keeps the connection");
	again = conn_of(c, address, METHOD_OK, 2000, &rc);
	is_int(again, first, "which the next call uses");

	for (int i = 0; i < 4; i++) {
		callers[i] = (struct caller){ .c = c, .address = address };
		if (pthread_create(&threads[i], NULL, caller_run,
		    &callers[i]) != 0)
			tap_bail("pthread_create");
	}
	for (int i = 0; i < 4; i++)
		pthread_join(threads[i], NULL);
	for (int i = 0; i < 4; i++)
		same += callers[i].answered;
	is_int(same, 80, "four threads' calls at once all answered");
	is_int(atomic_load(&max_conn), first, "over the one connection: "
	    "the server saw no other");

	(void)conn_of(c, address, METHOD_SLOW, 100, &rc);
	is_int(rc, -ETIMEDOUT, "a reply that does not come by the deadline: "
	    "-ETIMEDOUT");
	usleep(400 * 1000);
	again = conn_of(c, address, METHOD_OK, 2000, &rc);
	ok(rc == 0 && again != 0 && again != first, "and the next call goes "
	    "over a new connection (%llu, was %llu)",
	    (unsigned long long)again, (unsigned long long)first);
	first = again;

	must(tabletd_conns_retain(c, &live, 1));
	again = conn_of(c, address, METHOD_OK, 2000, &rc);
	is_int(again, first, "a round with the server live under the same "
	    "name keeps its connection");
	snprintf(live.name, sizeof(live.name), "%s#2", address);
	must(tabletd_conns_retain(c, &live, 1));
	again = conn_of(c, address, METHOD_OK, 2000, &rc);
	ok(again != 0 && again != first, "one where it serves under another "
	    "name (it restarted) closes it");
	first = again;
	must(tabletd_conns_retain(c, NULL, 0));
	again = conn_of(c, address, METHOD_OK, 2000, &rc);
	ok(again != 0 && again != first, "and so does one where it is not "
	    "live");

	test_abandon(c, address, false);
	again = conn_of(c, address, METHOD_OK, 2000, &rc);
	ok(rc == 0 && again != first, "the next call over a kept connection "
	    "opens a new one (%d)", rc);
	must(tabletd_conns_retain(c, NULL, 0));	/* no kept one to abort */
	test_abandon(c, address, true);

	tabletd_conns_free(c);
	tabletd_conns_free(NULL);
	rpc_server_close(s);
	return tap_done();
}
