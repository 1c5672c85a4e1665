/*
 * test_rpc.c - the RPC transport (src/rpc) over loopback TCP: frames
 * encoded and decoded; round trips from 0 bytes to 16 MiB; threads
 * pipelining calls over one client, each reply matched to its request;
 * a slow request not holding up a fast one; deadlines on the client and
 * on the server; error statuses and their messages; raw sockets that
 * misbehave (wrong preamble, bad checksum, oversized length, truncated
 * frame, garbage, silence, never reading) losing only their own
 * connection while a normal client is answered throughout; clients that
 * leave mid-request or end their stream after their requests; closing a
 * server or a client with calls in flight; refused connections; the
 * handshake that proves the cell's secret, and what it refuses.
 *
 * TEST_SMALL=1 shrinks the pipelined calls (for valgrind).
 */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "rpc/format.h"
#include "rpc/rpc.h"
#include "rpc/rpc_int.h"
#include "tap.h"
#include "util/alloc.h"
#include "util/buf.h"
#include "util/coding.h"
#include "util/error.h"

#define MS		1000000ll	/* nanoseconds */
#define MIB		((size_t)1 << 20)
#define SEND_TIMEOUT_MS	1000		/* the test servers' */

enum method {
	M_ECHO = 1,		/* reply = request */
	M_SLEEP = 2,		/* fixed32 ms: sleep, reply "slept" */
	M_ERROR = 3,		/* -ENOENT with a message */
	M_ERROR_BARE = 4,	/* -EIO, no message */
	M_MARK = 5,		/* count the run, reply empty */
};

static const char ERROR_MESSAGE[] = "no such tablet here";

struct counts {
	atomic_int sleeps_started;
	atomic_int sleeps_finished;
	atomic_int marks;
};

static void
sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static int
handle(void *arg, const struct rpc_call *call, struct slice req,
    struct buf *reply)
{
	struct counts *n = arg;

	switch (call->method) {
	case M_ECHO:
		return buf_append(reply, req.p, req.n);
	case M_SLEEP:
		atomic_fetch_add(&n->sleeps_started, 1);
		sleep_ms(req.n >= 4 ? (int)get_fixed32(req.p) : 100);
		atomic_fetch_add(&n->sleeps_finished, 1);
		return buf_append(reply, "slept", 5);
	case M_ERROR:
		buf_append(reply, ERROR_MESSAGE, strlen(ERROR_MESSAGE));
		return -ENOENT;
	case M_ERROR_BARE:
		return -EIO;
	case M_MARK:
		atomic_fetch_add(&n->marks, 1);
		return 0;
	default:
		return -ENOSYS;
	}
}

static struct rpc_server *
server_start(const struct rpc_server_options *opts, struct counts *n)
{
	struct rpc_server_options o = { .send_timeout_ms = SEND_TIMEOUT_MS };
	struct rpc_server *s;
	int rc;

	if (opts != NULL)
		o = *opts;
	if ((rc = rpc_server_open("127.0.0.1:0", &o, handle, n, &s)) < 0) {
		diag("rpc_server_open: %s", bt_strerror(rc));
		tap_bail("no server");
	}
	return s;
}

/* A client of s proving secret (NULL: none). */
static struct rpc_client *
client_start_keyed(struct rpc_server *s, const uint8_t *secret)
{
	struct rpc_client *c;
	int rc;

	rc = rpc_client_open(rpc_server_address(s), secret,
	    rpc_now_ns() + 5000 * MS, &c);
	if (rc < 0) {
		diag("rpc_client_open: %s", bt_strerror(rc));
		tap_bail("no client");
	}
	return c;
}

static struct rpc_client *
client_start(struct rpc_server *s)
{
	return client_start_keyed(s, NULL);
}

static int64_t
ms_from_now(int ms)
{
	return rpc_now_ns() + ms * MS;
}

/* An M_SLEEP request for ms. */
static struct slice
sleep_req(uint8_t b[4], int ms)
{
	put_fixed32(b, (uint32_t)ms);
	return slice_make(b, 4);
}

/* Echo p[0..n) and compare; true when the reply is the request. */
static bool
echo_ok(struct rpc_client *c, const void *p, size_t n, int timeout_ms)
{
	struct buf reply;
	int32_t status = 1;
	bool sent, same;
	int rc;

	buf_init(&reply);
	rc = rpc_client_call(c, M_ECHO, slice_make(p, n),
	    ms_from_now(timeout_ms), &reply, &status, &sent);
	same = rc == 0 && status == 0 && reply.n == n &&
	    (n == 0 || memcmp(reply.p, p, n) == 0);
	if (!same)
		diag("echo of %zu bytes: rc %s, status %d, %zu bytes back", n,
		    bt_strerror(rc), status, reply.n);
	buf_release(&reply);
	return same;
}

static void
test_frames(void)
{
	struct rpc_frame f = { .id = 0x0102030405060708ull, .method = 9,
	    .status = -5, .timeout_ms = 77, .payload = slice_str("hello") };
	struct rpc_frame g;
	struct buf b;
	size_t used;

	buf_init(&b);
	is_int(rpc_frame_encode(&b, &f), 0, "frame: encodes");
	is_int(b.n, RPC_FRAME_HEADER_SIZE + 5, "frame: header and payload");
	is_int(get_fixed32(b.p), RPC_FRAME_MIN_LENGTH + 5,
	    "frame: length counts the bytes after it");
	ok(rpc_frame_decode(b.p, b.n, RPC_MAX_FRAME, &g, &used) == 0 &&
	    used == b.n && g.id == f.id && g.method == 9 && g.status == -5 &&
	    g.timeout_ms == 77 && slice_equal(g.payload, f.payload),
	    "frame: decodes to what was encoded");
	ok(rpc_frame_decode(b.p, 3, RPC_MAX_FRAME, &g, &used) == 1 &&
	    used == RPC_FRAME_HEADER_SIZE, "frame: 3 bytes want a header");
	ok(rpc_frame_decode(b.p, b.n - 1, RPC_MAX_FRAME, &g, &used) == 1 &&
	    used == b.n, "frame: one byte short wants the whole frame");
	is_int(rpc_frame_decode(b.p, b.n, 4, &g, &used), -EMSGSIZE,
	    "frame: a payload over max_frame is refused");
	b.p[b.n - 1] ^= 1;
	is_int(rpc_frame_decode(b.p, b.n, RPC_MAX_FRAME, &g, &used),
	    BT_ECHECKSUM, "frame: a flipped payload bit fails the crc");
	put_fixed32(b.p, RPC_FRAME_MIN_LENGTH - 1);
	is_int(rpc_frame_decode(b.p, b.n, RPC_MAX_FRAME, &g, &used), -EPROTO,
	    "frame: a length below the header's is refused");
	put_fixed32(b.p, 0xffffffffu);
	is_int(rpc_frame_decode(b.p, 4, RPC_MAX_FRAME, &g, &used), -EMSGSIZE,
	    "frame: an oversized length is refused from its 4 bytes");
	buf_release(&b);
}

static void
test_sizes(struct rpc_server *s)
{
	static const size_t sizes[] = { 0, 1, 64 << 10, 16 << 20 };
	struct rpc_client *c = client_start(s);
	uint64_t seed = 7;
	uint8_t *p;

	p = malloc(16 * MIB);
	for (size_t i = 0; i < 16 * MIB; i += 8) {
		uint64_t x = tap_rand(&seed);
		memcpy(p + i, &x, 8);
	}
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		ok(echo_ok(c, p, sizes[i], 30000), "round trip of %zu bytes",
		    sizes[i]);
	free(p);
	rpc_client_close(c);
}

struct pipeline {
	struct rpc_client *c;
	int thread, calls;
	int matched, failed;
};

/* Each request names its thread and number and carries bytes made from
 * them, of a length that varies, so a reply given to the wrong caller
 * cannot pass. */
static void *
pipeline_run(void *arg)
{
	struct pipeline *pl = arg;
	uint64_t state = (uint64_t)pl->thread * 7919 + 1;
	uint8_t req[300];
	size_t n;

	for (int i = 0; i < pl->calls; i++) {
		n = 8 + tap_rand(&state) % 280;
		put_fixed32(req, (uint32_t)pl->thread);
		put_fixed32(req + 4, (uint32_t)i);
		for (size_t k = 8; k < n; k++)
			req[k] = (uint8_t)(pl->thread * 31 + i + k);
		if (echo_ok(pl->c, req, n, 30000))
			pl->matched++;
		else
			pl->failed++;
	}
	return NULL;
}

static void
test_pipelined(struct rpc_server *s, bool small)
{
	struct rpc_client *c = client_start(s);
	struct pipeline pl[8];
	pthread_t t[8];
	int calls = small ? 200 : 2000, matched = 0, failed = 0;

	for (int i = 0; i < 8; i++) {
		pl[i] = (struct pipeline){ c, i, calls, 0, 0 };
		pthread_create(&t[i], NULL, pipeline_run, &pl[i]);
	}
	for (int i = 0; i < 8; i++) {
		pthread_join(t[i], NULL);
		matched += pl[i].matched;
		failed += pl[i].failed;
	}
	is_int(matched, 8 * calls, "pipelined: 8 threads x %d calls over one "
	    "client, every reply its own request's", calls);
	is_int(failed, 0, "pipelined: no call failed");
	ok(!rpc_client_broken(c), "pipelined: the connection stands");
	rpc_client_close(c);
}

struct slow_call {
	struct rpc_client *c;
	int ms, timeout_ms;
	int rc;
	int32_t status;
	bool sent;
	atomic_bool done;
};

static void *
slow_call_run(void *arg)
{
	struct slow_call *sc = arg;
	struct buf reply;
	uint8_t b[4];

	buf_init(&reply);
	sc->rc = rpc_client_call(sc->c, M_SLEEP, sleep_req(b, sc->ms),
	    sc->timeout_ms ? ms_from_now(sc->timeout_ms) : 0, &reply,
	    &sc->status, &sc->sent);
	buf_release(&reply);
	atomic_store(&sc->done, true);
	return NULL;
}

static void
test_out_of_order(struct rpc_server *s)
{
	struct rpc_client *c = client_start(s);
	struct slow_call sc = { .c = c, .ms = 3000 };
	int64_t t0, took;
	pthread_t t;
	bool fast;

	pthread_create(&t, NULL, slow_call_run, &sc);
	sleep_ms(100);
	t0 = rpc_now_ns();
	fast = echo_ok(c, "quick", 5, 5000);
	took = rpc_now_ns() - t0;
	ok(fast && !atomic_load(&sc.done),
	    "out of order: a fast call returns while a slow one is running");
	ok(took < 2000 * MS, "out of order: in %lld ms, not after the slow "
	    "one", (long long)(took / MS));
	pthread_join(t, NULL);
	ok(sc.rc == 0 && sc.status == 0, "out of order: the slow call "
	    "completes after");
	rpc_client_close(c);
}

static void
test_deadline(struct rpc_server *s, struct counts *n)
{
	struct rpc_client *c = client_start(s);
	struct buf reply;
	int32_t status;
	int64_t t0, took;
	uint8_t b[4];
	bool sent = false;
	int rc, before = atomic_load(&n->sleeps_finished);

	buf_init(&reply);
	t0 = rpc_now_ns();
	rc = rpc_client_call(c, M_SLEEP, sleep_req(b, 2000), ms_from_now(150),
	    &reply, &status, &sent);
	took = rpc_now_ns() - t0;
	is_int(rc, -ETIMEDOUT, "deadline: a handler sleeping past it is "
	    "-ETIMEDOUT");
	ok(sent, "deadline: the request was sent");
	ok(took >= 140 * MS && took < 1500 * MS, "deadline: returned at it "
	    "(%lld ms)", (long long)(took / MS));
	ok(echo_ok(c, "after", 5, 5000) && !rpc_client_broken(c),
	    "deadline: the connection still works");
	while (atomic_load(&n->sleeps_finished) == before)
		sleep_ms(10);
	sleep_ms(50);
	ok(echo_ok(c, "later", 5, 5000), "deadline: the late reply is "
	    "dropped, not given to the next call");
	rc = rpc_client_call(c, M_ECHO, slice_str("x"), ms_from_now(-1),
	    &reply, &status, &sent);
	ok(rc == -ETIMEDOUT && !sent, "deadline: one already past sends "
	    "nothing");
	rc = rpc_client_call(c, M_ECHO, slice_make(b, RPC_MAX_FRAME + 1), 0,
	    &reply, &status, &sent);
	ok(rc == -EMSGSIZE && !sent, "a request over RPC_MAX_FRAME is "
	    "-EMSGSIZE, not sent");
	buf_release(&reply);
	rpc_client_close(c);
}

/*
 * A reply longer in coming than the client's receive timeout still comes;
 * an idempotent call answers as any; and on a connection the server
 * closed while idle, a call sends nothing while an idempotent one, which
 * skips that look, fails as sent.
 */
static void
test_idempotent(struct counts *n)
{
	struct rpc_server *s = server_start(NULL, n);
	struct rpc_client *c = client_start(s), *d = client_start(s);
	struct buf reply;
	int32_t status = 1;
	uint8_t b[4];
	bool sent;
	int rc;

	buf_init(&reply);
	rc = rpc_client_call(c, M_SLEEP, sleep_req(b, 300), ms_from_now(5000),
	    &reply, &status, &sent);
	ok(rc == 0 && status == 0 && reply.n == 5 &&
	    memcmp(reply.p, "slept", 5) == 0, "idempotent: a reply slower "
	    "than the receive timeout comes");
	buf_clear(&reply);
	rc = rpc_client_call_idempotent(d, M_ECHO, slice_str("again"),
	    ms_from_now(5000), &reply, &status, &sent);
	ok(rc == 0 && status == 0 && sent && reply.n == 5 &&
	    memcmp(reply.p, "again", 5) == 0, "idempotent: a call answers");
	rpc_server_close(s);
	rc = rpc_client_call(c, M_ECHO, slice_str("x"), ms_from_now(5000),
	    &reply, &status, &sent);
	ok(rc == -ECONNRESET && !sent, "idempotent: a call on a connection "
	    "closed while idle sends nothing (%s)", bt_strerror(rc));
	rc = rpc_client_call_idempotent(d, M_ECHO, slice_str("x"),
	    ms_from_now(5000), &reply, &status, &sent);
	ok(rc < 0 && rpc_client_broken(d), "idempotent: one on a connection "
	    "closed while idle fails (%s)", bt_strerror(rc));
	buf_release(&reply);
	rpc_client_close(c);
	rpc_client_close(d);
}

/* A raw connection to s, the preamble exchanged when greet. */
static void raw_send_frame(int fd, const struct rpc_frame *f);

/*
 * The client's side of the handshake (rpc/format.h) by hand on fd, with
 * secret (NULL: the empty key), sending proof_bytes of the proof (fewer
 * than RPC_PROOF_SIZE: a proof cut short, the stream then ended) and
 * then, unless NULL, the frame then at once, and without checking the
 * server's proof.  1 when the welcome came; 0 when the connection ended
 * instead (nothing more was received); negative when the handshake went
 * otherwise.
 */
static int
raw_handshake(int fd, const uint8_t *secret, size_t proof_bytes,
    const struct rpc_frame *then)
{
	uint8_t hello[RPC_HELLO_SIZE], challenge[RPC_CHALLENGE_SIZE];
	uint8_t proof[RPC_PROOF_SIZE], welcome[RPC_WELCOME_SIZE];
	int rc;

	memcpy(hello, RPC_PREAMBLE, RPC_PREAMBLE_SIZE);
	if (rpc_auth_random(hello + RPC_PREAMBLE_SIZE, RPC_NONCE_SIZE) < 0 ||
	    send(fd, hello, sizeof(hello), MSG_NOSIGNAL) != sizeof(hello) ||
	    rpc_socket_recv_exact(fd, challenge, sizeof(challenge), 0) < 0 ||
	    memcmp(challenge, RPC_PREAMBLE, RPC_PREAMBLE_SIZE) != 0)
		return -EPROTO;
	rpc_auth_proof(secret, RPC_LABEL_CLIENT, hello + RPC_PREAMBLE_SIZE,
	    challenge + RPC_PREAMBLE_SIZE, proof);
	if (send(fd, proof, proof_bytes, MSG_NOSIGNAL) != (ssize_t)proof_bytes)
		return -EPIPE;
	if (proof_bytes < RPC_PROOF_SIZE)
		shutdown(fd, SHUT_WR);
	else if (then != NULL)
		raw_send_frame(fd, then);
	rc = rpc_socket_recv_exact(fd, welcome, sizeof(welcome), 0);
	if (rc == -ECONNRESET)
		return 0;
	if (rc < 0 || memcmp(welcome, RPC_WELCOME, RPC_WELCOME_SIZE) != 0)
		return -EPROTO;
	return 1;
}

static int
raw_connect(struct rpc_server *s, bool greet)
{
	struct timeval tv = { 10, 0 };
	int fd;

	if (rpc_socket_connect(rpc_server_address(s), ms_from_now(5000),
	    &fd) < 0)
		tap_bail("raw connect");
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (greet && raw_handshake(fd, NULL, RPC_PROOF_SIZE, NULL) != 1)
		tap_bail("raw handshake");
	return fd;
}

static void
raw_send_frame(int fd, const struct rpc_frame *f)
{
	struct buf b;

	buf_init(&b);
	if (rpc_frame_encode(&b, f) < 0)
		tap_bail("encode");
	(void)send(fd, b.p, b.n, MSG_NOSIGNAL);
	buf_release(&b);
}

/* Read one frame from fd into *f (payload in b).  0 or negative. */
static int
raw_read_frame(int fd, struct buf *b, struct rpc_frame *f)
{
	size_t need = RPC_FRAME_HEADER_SIZE;
	int rc;

	buf_clear(b);
	for (;;) {
		if ((rc = rpc_frame_decode(b->p, b->n, RPC_MAX_FRAME, f,
		    &need)) <= 0)
			return rc;
		if (buf_reserve(b, need - b->n) < 0 ||
		    rpc_socket_recv_exact(fd, b->p + b->n, need - b->n, 0) < 0)
			return -ECONNRESET;
		b->n = need;
	}
}

/* Whether the server ends fd's connection (end of stream or reset)
 * within timeout_ms, reading whatever comes before; *got counts it. */
static bool
raw_closed_within(int fd, int timeout_ms, size_t *got)
{
	int64_t deadline = ms_from_now(timeout_ms);
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	static uint8_t sink[1 << 16];
	ssize_t r;

	*got = 0;
	while (rpc_now_ns() < deadline) {
		if (poll(&pfd, 1, 100) <= 0)
			continue;
		r = recv(fd, sink, sizeof(sink), MSG_DONTWAIT);
		if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR))
			return true;
		if (r > 0)
			*got += (size_t)r;
	}
	return false;
}

/* A normal client calling all along, in the background of a bad one. */
struct bystander {
	struct rpc_client *c;
	atomic_bool stop;
	atomic_int ok, failed;
	pthread_t t;
};

static void *
bystander_run(void *arg)
{
	struct bystander *by = arg;

	while (!atomic_load(&by->stop)) {
		if (echo_ok(by->c, "bystander", 9, 10000))
			atomic_fetch_add(&by->ok, 1);
		else
			atomic_fetch_add(&by->failed, 1);
		sleep_ms(5);
	}
	return NULL;
}

static void
bystander_start_keyed(struct bystander *by, struct rpc_server *s,
    const uint8_t *secret)
{
	by->c = client_start_keyed(s, secret);
	atomic_store(&by->stop, false);
	atomic_store(&by->ok, 0);
	atomic_store(&by->failed, 0);
	pthread_create(&by->t, NULL, bystander_run, by);
	while (atomic_load(&by->ok) == 0 && atomic_load(&by->failed) == 0)
		sleep_ms(1);
}

static void
bystander_start(struct bystander *by, struct rpc_server *s)
{
	bystander_start_keyed(by, s, NULL);
}

/* Stop the bystander and say whether it was answered during and after. */
static void
bystander_stop(struct bystander *by, const char *what)
{
	int during = atomic_load(&by->ok);

	/* Another answer, within 10 s: on a loaded machine the bystander
	 * may not run at all for tens of milliseconds. */
	for (int i = 0; i < 1000 && atomic_load(&by->ok) <= during &&
	    during <= 1; i++)
		sleep_ms(10);
	ok(atomic_load(&by->ok) > during || during > 1,
	    "%s: a normal client was answered during (%d calls)", what, during);
	atomic_store(&by->stop, true);
	pthread_join(by->t, NULL);
	is_int(atomic_load(&by->failed), 0, "%s: none of its calls failed",
	    what);
	ok(echo_ok(by->c, "after", 5, 5000), "%s: and it is answered after",
	    what);
	rpc_client_close(by->c);
}

/* One misbehaving raw connection, which must be closed within
 * timeout_ms after it began, with at most max_got bytes sent to it. */
static void
bad_client(struct rpc_server *s, const char *what, int fd, int timeout_ms,
    size_t max_got)
{
	size_t got = 0;
	bool closed = raw_closed_within(fd, timeout_ms, &got);

	ok(closed && got <= max_got, "%s: its connection is closed (%zu "
	    "bytes to it)", what, got);
	close(fd);
}

static void
test_bad_clients(struct rpc_server *s)
{
	struct rpc_frame f = { .id = 1, .method = M_ECHO,
	    .payload = slice_str("payload") };
	struct bystander by;
	uint8_t garbage[4096], hdr[8];
	uint64_t seed = tap_seed();
	struct buf b;
	int fd;

	/* Wrong preamble: not even the server's preamble comes back. */
	bystander_start(&by, s);
	fd = raw_connect(s, false);
	(void)send(fd, "GET / HTTP/1.1\r\n\r\n", 18, MSG_NOSIGNAL);
	bad_client(s, "wrong preamble", fd, 5000, 0);
	bystander_stop(&by, "wrong preamble");

	/* A bad checksum, after a good frame that is answered. */
	bystander_start(&by, s);
	fd = raw_connect(s, true);
	buf_init(&b);
	rpc_frame_encode(&b, &f);
	rpc_frame_encode(&b, &f);
	b.p[b.n - 1] ^= 0x40;
	(void)send(fd, b.p, b.n, MSG_NOSIGNAL);
	bad_client(s, "bad checksum", fd, 5000, b.n / 2);
	bystander_stop(&by, "bad checksum");

	/* A length over max_frame. */
	bystander_start(&by, s);
	fd = raw_connect(s, true);
	put_fixed32(hdr, (uint32_t)(RPC_FRAME_MIN_LENGTH + RPC_MAX_FRAME + 1));
	put_fixed32(hdr + 4, 0);
	(void)send(fd, hdr, 8, MSG_NOSIGNAL);
	bad_client(s, "oversized length", fd, 5000, 0);
	bystander_stop(&by, "oversized length");

	/* Half a frame, then the end of the stream. */
	bystander_start(&by, s);
	fd = raw_connect(s, true);
	(void)send(fd, b.p, b.n / 4, MSG_NOSIGNAL);
	shutdown(fd, SHUT_WR);
	bad_client(s, "truncated frame", fd, 5000, 0);
	bystander_stop(&by, "truncated frame");
	buf_release(&b);

	/* Random bytes from the start. */
	bystander_start(&by, s);
	for (size_t i = 0; i < sizeof(garbage); i++)
		garbage[i] = (uint8_t)tap_rand(&seed);
	fd = raw_connect(s, false);
	(void)send(fd, garbage, sizeof(garbage), MSG_NOSIGNAL);
	bad_client(s, "garbage", fd, 5000, 0);
	/* and after a good preamble, its length field made one that the
	 * garbage holds whole, so that its checksum is what fails (a random
	 * length of a frame larger than the garbage would leave the server
	 * waiting for the rest, as it should: one seed in 14 did) */
	fd = raw_connect(s, true);
	garbage[0] = 100;
	garbage[1] = garbage[2] = garbage[3] = 0;
	(void)send(fd, garbage, sizeof(garbage), MSG_NOSIGNAL);
	bad_client(s, "garbage after the preamble", fd, 5000, 0);
	bystander_stop(&by, "garbage");

	/* Silence: no preamble ever; closed after the send timeout. */
	bystander_start(&by, s);
	fd = raw_connect(s, false);
	bad_client(s, "stall", fd, SEND_TIMEOUT_MS + 5000, 0);
	bystander_stop(&by, "stall");

	/* Requests whose replies are never read: 48 echoes of 1 MiB each are
	 * more than the socket buffers can hold (loopback's receive buffer
	 * may grow to tcp_rmem's limit, 32 MiB on some machines, before its
	 * reader reads); the reply that cannot leave within the send
	 * timeout closes the connection, and the workers go on serving.
	 * What was sent before is read, then the end of the stream. */
	bystander_start(&by, s);
	fd = raw_connect(s, true);
	{
		/* And the receive buffer fixed small, as far as the kernel
		 * lets a buffer be fixed once the connection is made. */
		int rcvbuf = 256 << 10;
		uint8_t *big = calloc(1, MIB);

		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));

		for (int i = 0; i < 48; i++) {
			struct rpc_frame g = { .id = (uint64_t)i + 1,
			    .method = M_ECHO, .payload = slice_make(big, MIB) };
			raw_send_frame(fd, &g);
		}
		free(big);
	}
	sleep_ms(SEND_TIMEOUT_MS * 3);
	bad_client(s, "never reads", fd, 10000, 48 * MIB - 1);
	bystander_stop(&by, "never reads");
}

/* The methods test_short_methods' server runs on a connection's reader. */
static bool
short_method(uint32_t method)
{
	return method == M_ECHO || method == M_MARK;
}

/*
 * A short request runs on its connection's reader when nothing else of
 * that connection is in flight: it is answered while the only worker is
 * busy.  One sent beside a request in flight waits for a worker, so that
 * a pipelining client's requests still run in parallel.
 */
static void
test_short_methods(struct counts *n)
{
	struct rpc_server_options o = { .workers = 1,
	    .send_timeout_ms = SEND_TIMEOUT_MS, .short_method = short_method };
	struct rpc_server *s = server_start(&o, n);
	struct rpc_client *busy = client_start(s), *c = client_start(s);
	struct slow_call sc = { .c = busy, .ms = 1500 };
	struct buf b;
	int32_t status;
	bool sent;
	pthread_t t;
	int rc, started = atomic_load(&n->sleeps_started);

	pthread_create(&t, NULL, slow_call_run, &sc);
	while (atomic_load(&n->sleeps_started) == started)
		sleep_ms(1);
	ok(echo_ok(c, "short", 5, 500), "short: an echo is answered while "
	    "the only worker sleeps");
	buf_init(&b);
	rc = rpc_client_call(c, M_MARK, slice_str(""), ms_from_now(500), &b,
	    &status, &sent);
	ok(rc == 0 && status == 0, "short: and so is a second short call");
	rc = rpc_client_call(busy, M_ECHO, slice_str("x"), ms_from_now(300),
	    &b, &status, &sent);
	is_int(rc, -ETIMEDOUT, "short: a short call beside one in flight on "
	    "its connection waits for the worker");
	rc = rpc_client_call(c, M_SLEEP, slice_str(""), ms_from_now(300), &b,
	    &status, &sent);
	is_int(rc, -ETIMEDOUT, "short: a call of another method waits for "
	    "the worker");
	pthread_join(t, NULL);
	ok(sc.rc == 0 && sc.status == 0, "short: the sleep completed");
	ok(echo_ok(busy, "after", 5, 5000), "short: its connection serves on");
	buf_release(&b);
	rpc_client_close(c);
	rpc_client_close(busy);
	rpc_server_close(s);
}

static void
test_server_expiry(struct counts *n)
{
	struct rpc_server_options o = { .workers = 1,
	    .send_timeout_ms = SEND_TIMEOUT_MS };
	struct rpc_server *s = server_start(&o, n);
	struct rpc_client *c = client_start(s);
	struct slow_call sc = { .c = c, .ms = 800 };
	struct rpc_frame f = { .id = 42, .method = M_MARK, .timeout_ms = 50 };
	struct buf b;
	int32_t status;
	bool sent;
	pthread_t t;
	int fd, rc, marks = atomic_load(&n->marks), started;

	started = atomic_load(&n->sleeps_started);
	pthread_create(&t, NULL, slow_call_run, &sc);
	while (atomic_load(&n->sleeps_started) == started)
		sleep_ms(1);
	/* The one worker is busy for 800 ms: requests with 50 and 100 ms
	 * left wait in the queue past their time. */
	fd = raw_connect(s, true);
	raw_send_frame(fd, &f);
	buf_init(&b);
	rc = rpc_client_call(c, M_MARK, slice_str(""), ms_from_now(100), &b,
	    &status, &sent);
	is_int(rc, -ETIMEDOUT, "server expiry: the client's call times out");
	rc = raw_read_frame(fd, &b, &f);
	ok(rc == 0 && f.id == 42 && f.method == M_MARK &&
	    f.status == -ETIMEDOUT, "server expiry: a request whose time ran "
	    "out in the queue is answered -ETIMEDOUT (status %d)", f.status);
	close(fd);
	pthread_join(t, NULL);
	ok(sc.rc == 0, "server expiry: the slow call completed");
	sleep_ms(100);
	is_int(atomic_load(&n->marks), marks, "server expiry: the handler "
	    "never ran for the expired requests");
	buf_clear(&b);
	rc = rpc_client_call(c, M_MARK, slice_str(""), ms_from_now(5000), &b,
	    &status, &sent);
	ok(rc == 0 && status == 0 && atomic_load(&n->marks) == marks + 1,
	    "server expiry: a request in time runs");
	buf_release(&b);
	rpc_client_close(c);
	rpc_server_close(s);
}

static void
test_errors(struct rpc_server *s)
{
	struct rpc_client *c = client_start(s);
	const char *eio = bt_strerror(-EIO);
	struct buf reply;
	int32_t status = 0;
	bool sent;
	int rc;

	buf_init(&reply);
	rc = rpc_client_call(c, M_ERROR, slice_str("q"), ms_from_now(5000),
	    &reply, &status, &sent);
	ok(rc == 0 && status == -ENOENT && reply.n == strlen(ERROR_MESSAGE) &&
	    memcmp(reply.p, ERROR_MESSAGE, reply.n) == 0,
	    "error: the handler's status and message arrive");
	buf_clear(&reply);
	rc = rpc_client_call(c, M_ERROR_BARE, slice_str("q"),
	    ms_from_now(5000), &reply, &status, &sent);
	ok(rc == 0 && status == -EIO && reply.n == strlen(eio) &&
	    memcmp(reply.p, eio, reply.n) == 0,
	    "error: without a message, the code's description is sent");
	buf_clear(&reply);
	rc = rpc_client_call(c, 999, slice_str("q"), ms_from_now(5000),
	    &reply, &status, &sent);
	ok(rc == 0 && status == -ENOSYS, "error: an unknown method's status");
	ok(echo_ok(c, "fine", 4, 5000), "error: the connection stays");
	buf_release(&reply);
	rpc_client_close(c);
}

static void
test_client_leaves(struct rpc_server *s, struct counts *n)
{
	struct rpc_frame f = { .id = 5, .method = M_SLEEP };
	uint8_t b[4];
	int64_t deadline = ms_from_now(5000);
	int fd, before = atomic_load(&n->sleeps_finished);

	f.payload = sleep_req(b, 300);
	fd = raw_connect(s, true);
	raw_send_frame(fd, &f);
	sleep_ms(50);
	close(fd);
	while (atomic_load(&n->sleeps_finished) == before &&
	    rpc_now_ns() < deadline)
		sleep_ms(5);
	ok(atomic_load(&n->sleeps_finished) > before, "a client that left "
	    "mid-request: its handler still completes");
	{
		struct rpc_client *c = client_start(s);

		ok(echo_ok(c, "x", 1, 5000), "a client that left mid-request: "
		    "others are served");
		rpc_client_close(c);
	}
}

/* A client that ends its stream after its requests still gets their
 * replies, then the end of the stream. */
static void
test_half_close(struct rpc_server *s)
{
	struct rpc_frame f = { .method = M_ECHO, .payload = slice_str("half") };
	struct buf b;
	size_t got;
	int fd, replies = 0;

	fd = raw_connect(s, true);
	for (uint64_t id = 1; id <= 3; id++) {
		f.id = id;
		raw_send_frame(fd, &f);
	}
	shutdown(fd, SHUT_WR);
	buf_init(&b);
	while (raw_read_frame(fd, &b, &f) == 0 && f.status == 0 &&
	    slice_equal(f.payload, slice_str("half")))
		replies++;
	is_int(replies, 3, "half close: the requests sent before the end of "
	    "the stream are answered");
	ok(raw_closed_within(fd, 5000, &got) && got == 0, "half close: then "
	    "the stream ends");
	buf_release(&b);
	close(fd);
}

/* max_connections: the one over it is closed at once. */
static void
test_max_connections(struct counts *n)
{
	struct rpc_server_options o = { .max_connections = 2,
	    .send_timeout_ms = SEND_TIMEOUT_MS };
	struct rpc_server *s = server_start(&o, n);
	struct rpc_client *a = client_start(s), *b = client_start(s), *c;
	int rc;

	rc = rpc_client_open(rpc_server_address(s), NULL, ms_from_now(5000), &c);
	ok(rc == -ECONNRESET, "max_connections: one more is closed (%s)",
	    bt_strerror(rc));
	if (rc == 0)
		rpc_client_close(c);
	rpc_client_close(a);
	sleep_ms(100);
	c = NULL;
	rc = rpc_client_open(rpc_server_address(s), NULL, ms_from_now(5000), &c);
	ok(rc == 0 && echo_ok(c, "x", 1, 5000), "max_connections: room "
	    "again once one closed");
	rpc_client_close(c);
	rpc_client_close(b);
	rpc_server_close(s);
}

/* A request over the server's max_frame ends the connection, and the
 * client knows. */
static void
test_server_max_frame(struct counts *n)
{
	struct rpc_server_options o = { .max_frame = 1024,
	    .send_timeout_ms = SEND_TIMEOUT_MS };
	struct rpc_server *s = server_start(&o, n);
	struct rpc_client *c = client_start(s);
	static uint8_t big[2048];
	struct buf reply;
	int32_t status;
	bool sent = false;
	int rc;

	buf_init(&reply);
	ok(echo_ok(c, big, 1024, 5000), "max_frame: a request at it is served");
	rc = rpc_client_call(c, M_ECHO, slice_make(big, 2048),
	    ms_from_now(5000), &reply, &status, &sent);
	ok(rc < 0 && rc != -ETIMEDOUT && sent && rpc_client_broken(c),
	    "max_frame: one over it breaks the connection (%s)",
	    bt_strerror(rc));
	rc = rpc_client_call(c, M_ECHO, slice_str("x"), ms_from_now(5000),
	    &reply, &status, &sent);
	ok(rc < 0 && !sent, "max_frame: later calls fail at once, unsent");
	buf_release(&reply);
	rpc_client_close(c);
	rpc_server_close(s);
}

static void
test_server_close_in_flight(struct counts *n)
{
	struct rpc_server_options o = { .workers = 2,
	    .send_timeout_ms = SEND_TIMEOUT_MS };
	struct rpc_server *s = server_start(&o, n);
	struct rpc_client *c = client_start(s);
	struct slow_call sc[4];
	struct buf reply;
	int32_t status;
	pthread_t t[4];
	int64_t t0, took;
	int started = atomic_load(&n->sleeps_started);
	int finished = atomic_load(&n->sleeps_finished), failed = 0, rc;
	bool all_sent = true, sent = true;

	for (int i = 0; i < 4; i++) {
		sc[i] = (struct slow_call){ .c = c, .ms = 500 };
		pthread_create(&t[i], NULL, slow_call_run, &sc[i]);
	}
	/* Two run on the two workers, two wait in the queue. */
	while (atomic_load(&n->sleeps_started) < started + 2)
		sleep_ms(1);
	sleep_ms(50);
	t0 = rpc_now_ns();
	rpc_server_close(s);
	took = rpc_now_ns() - t0;
	ok(atomic_load(&n->sleeps_finished) - finished == 2 &&
	    atomic_load(&n->sleeps_started) - started == 2,
	    "server close: waited for the 2 running handlers, ran no queued "
	    "one");
	ok(took < 3000 * MS, "server close: in %lld ms",
	    (long long)(took / MS));
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		failed += sc[i].rc < 0;
		all_sent = all_sent && sc[i].sent;
	}
	is_int(failed, 4, "server close: every call in flight fails");
	ok(all_sent, "server close: each says its request was sent");
	ok(rpc_client_broken(c), "server close: the client is broken");
	buf_init(&reply);
	rc = rpc_client_call(c, M_ECHO, slice_str("x"), 0, &reply, &status,
	    &sent);
	ok(rc < 0 && !sent, "server close: a later call fails at once, "
	    "unsent (%s)", bt_strerror(rc));
	buf_release(&reply);
	rpc_client_close(c);
}

/* A client that ended its stream and does not read its 8 MiB reply
 * holds a worker in a send for up to the send timeout (5 s here), but
 * not rpc_server_close. */
static void
test_server_close_owed_reply(struct counts *n)
{
	struct rpc_server_options o = { .send_timeout_ms = 5000 };
	struct rpc_server *s = server_start(&o, n);
	uint8_t *big = calloc(1, 8 * MIB);
	struct rpc_frame f = { .id = 1, .method = M_ECHO,
	    .payload = slice_make(big, 8 * MIB) };
	int64_t t0, took;
	int fd;

	fd = raw_connect(s, true);
	raw_send_frame(fd, &f);
	shutdown(fd, SHUT_WR);
	free(big);
	sleep_ms(500);
	t0 = rpc_now_ns();
	rpc_server_close(s);
	took = rpc_now_ns() - t0;
	ok(took < 3000 * MS, "server close: a reply owed to a client that "
	    "does not read does not hold it (%lld ms)", (long long)(took / MS));
	close(fd);
}

static void
test_client_close_in_flight(struct rpc_server *s)
{
	struct rpc_client *c = client_start(s);
	struct slow_call sc = { .c = c, .ms = 2000 };
	int64_t t0, took;
	pthread_t t;

	pthread_create(&t, NULL, slow_call_run, &sc);
	sleep_ms(100);
	t0 = rpc_now_ns();
	rpc_client_close(c);
	took = rpc_now_ns() - t0;
	pthread_join(t, NULL);
	ok(sc.rc == -ECONNRESET && sc.sent && took < 1500 * MS,
	    "client close: a call in flight fails at once (%s, %lld ms)",
	    bt_strerror(sc.rc), (long long)(took / MS));
}

/*
 * A server of its own for one connection, to see what a client says: with
 * secret NULL it closes after reading a preamble, as a server of version
 * 1 does; otherwise it proves secret, reads the client's proof and closes
 * without its welcome, as a server refusing that proof does.
 */
struct fake_server {
	int listen_fd;
	const uint8_t *secret;
	char *address;
	pthread_t t;
};

static void *
fake_server_run(void *arg)
{
	struct fake_server *f = arg;
	uint8_t hello[RPC_HELLO_SIZE], challenge[RPC_CHALLENGE_SIZE];
	uint8_t proof[RPC_PROOF_SIZE];
	int fd;

	if ((fd = accept(f->listen_fd, NULL, NULL)) < 0)
		return NULL;
	if (f->secret == NULL) {
		(void)rpc_socket_recv_exact(fd, hello, RPC_PREAMBLE_SIZE, 0);
	} else if (rpc_socket_recv_exact(fd, hello, sizeof(hello), 0) == 0) {
		memcpy(challenge, RPC_PREAMBLE, RPC_PREAMBLE_SIZE);
		memset(challenge + RPC_PREAMBLE_SIZE, 7, RPC_NONCE_SIZE);
		rpc_auth_proof(f->secret, RPC_LABEL_SERVER,
		    hello + RPC_PREAMBLE_SIZE, challenge + RPC_PREAMBLE_SIZE,
		    challenge + RPC_PREAMBLE_SIZE + RPC_NONCE_SIZE);
		(void)send(fd, challenge, sizeof(challenge), MSG_NOSIGNAL);
		(void)rpc_socket_recv_exact(fd, proof, sizeof(proof), 0);
	}
	close(fd);
	return NULL;
}

/* What a client of secret says of the fake server f: its code, and
 * whether its detail has want. */
static int
fake_server_client(const uint8_t *secret, const uint8_t *server_secret,
    const char *want, bool *said)
{
	struct fake_server f = { .secret = server_secret };
	struct rpc_client *c = NULL;
	int rc;

	if (rpc_socket_listen("127.0.0.1:0", &f.listen_fd, &f.address) < 0)
		tap_bail("fake server listen");
	pthread_create(&f.t, NULL, fake_server_run, &f);
	bt_error_clear();
	rc = rpc_client_open(f.address, secret, ms_from_now(5000), &c);
	*said = strstr(bt_error_detail(), want) != NULL &&
	    strstr(bt_error_detail(), f.address) != NULL;
	if (!*said)
		diag("detail: %s", bt_error_detail());
	rpc_client_close(c);
	pthread_join(f.t, NULL);
	close(f.listen_fd);
	bt_free(f.address);
	return rc;
}

/* Wait up to 5 s for the server's refused count to reach want. */
static uint64_t
refused_wait(struct rpc_server *s, uint64_t want)
{
	int64_t deadline = ms_from_now(5000);

	while (rpc_server_refused(s) < want && rpc_now_ns() < deadline)
		sleep_ms(10);
	return rpc_server_refused(s);
}

/*
 * The cell's secret (rpc/format.h): a client that proves it is served; a
 * wrong secret, no secret, a proof cut short and a preamble of version 1
 * are closed before a frame is read (a request sent after the handshake
 * is not run) and counted, while a client with the secret is answered
 * throughout; and a client says why a server would not have it.
 */
static void
test_secret(struct counts *n)
{
	uint8_t secret[RPC_SECRET_SIZE], other[RPC_SECRET_SIZE];
	struct rpc_server_options o = { .send_timeout_ms = SEND_TIMEOUT_MS,
	    .secret = secret };
	struct rpc_frame mark = { .id = 1, .method = M_MARK };
	struct rpc_server *s;
	struct rpc_client *c;
	struct bystander by;
	struct buf b;
	uint64_t refused;
	int marks, fd, rc;
	bool said;

	memset(secret, 0xa5, sizeof(secret));
	memcpy(other, secret, sizeof(other));
	other[RPC_SECRET_SIZE - 1] ^= 1;	/* one bit apart */
	s = server_start(&o, n);
	memset(secret, 0, sizeof(secret));	/* the server keeps a copy */
	memset(secret, 0xa5, sizeof(secret));

	c = client_start_keyed(s, secret);
	ok(echo_ok(c, "x", 1, 5000), "secret: a client that proves the "
	    "cell's secret is served");
	rpc_client_close(c);

	bystander_start_keyed(&by, s, secret);
	marks = atomic_load(&n->marks);
	refused = rpc_server_refused(s);

	c = NULL;
	bt_error_clear();
	rc = rpc_client_open(rpc_server_address(s), other, ms_from_now(5000),
	    &c);
	ok(rc == -EACCES && c == NULL &&
	    strstr(bt_error_detail(), "does not prove the cell's secret"),
	    "secret: a client of another secret finds the server's proof "
	    "wrong (%s: %s)", bt_strerror(rc), bt_error_detail());
	rc = rpc_client_open(rpc_server_address(s), NULL, ms_from_now(5000),
	    &c);
	ok(rc == -EACCES && c == NULL, "secret: so does a client without "
	    "one (%s)", bt_strerror(rc));

	fd = raw_connect(s, false);
	is_int(raw_handshake(fd, other, RPC_PROOF_SIZE, &mark), 0,
	    "secret: a wrong proof, a request after it: closed without the "
	    "welcome");
	close(fd);
	fd = raw_connect(s, false);
	is_int(raw_handshake(fd, NULL, RPC_PROOF_SIZE, &mark), 0,
	    "secret: no secret's proof, a request after it: closed without "
	    "the welcome");
	close(fd);
	fd = raw_connect(s, false);
	is_int(raw_handshake(fd, secret, RPC_PROOF_SIZE / 2, NULL), 0,
	    "secret: the right proof cut short: closed without the welcome");
	close(fd);

	fd = raw_connect(s, false);
	buf_init(&b);
	(void)buf_append(&b, "TFSRPC\0\1", RPC_PREAMBLE_SIZE);
	(void)rpc_frame_encode(&b, &mark);
	(void)send(fd, b.p, b.n, MSG_NOSIGNAL);
	buf_release(&b);
	bad_client(s, "secret: a preamble of version 1 and a request", fd,
	    5000, 0);

	is_int(refused_wait(s, refused + 6) - refused, 6, "secret: the six "
	    "are counted as refused");
	fd = raw_connect(s, false);
	is_int(raw_handshake(fd, secret, RPC_PROOF_SIZE, &mark), 1,
	    "secret: the right proof by hand is welcome");
	close(fd);
	rc = 0;
	while (atomic_load(&n->marks) == marks && rc++ < 500)
		sleep_ms(10);
	is_int(atomic_load(&n->marks) - marks, 1, "secret: of the requests "
	    "sent after a handshake, only the welcome one's ran");
	bystander_stop(&by, "secret");
	rpc_server_close(s);

	ok(fake_server_client(secret, secret, "refused the connection: "
	    "wrong cell secret or old protocol", &said) == -EACCES && said,
	    "secret: a server that closes after the client's proof is a "
	    "refusal, said so, naming the server");
	ok(fake_server_client(secret, NULL, "closed the connection at the "
	    "hello", &said) == -ECONNRESET && said,
	    "secret: a server that closes at the hello (version 1) is "
	    "said so, naming the server");
}

static void
test_refused(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
	    .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sa);
	struct rpc_client *c = NULL;
	char address[64];
	int fd, rc;

	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    getsockname(fd, (struct sockaddr *)&sa, &len) < 0)
		tap_bail("bind");
	close(fd);	/* the port is free again, and nothing listens */
	snprintf(address, sizeof(address), "127.0.0.1:%d", ntohs(sa.sin_port));
	rc = rpc_client_open(address, NULL, ms_from_now(5000), &c);
	is_int(rc, -ECONNREFUSED, "connecting to a closed port is refused");
	ok(c == NULL, "and gives no client");
	is_int(rpc_client_open("localhost", NULL, 0, &c), -EINVAL,
	    "an address without a port is -EINVAL");
}

int
main(void)
{
	const char *small_env = getenv("TEST_SMALL");
	bool small = small_env != NULL && *small_env != '\0' &&
	    strcmp(small_env, "0") != 0;
	struct counts n = { 0 };
	struct rpc_server *s;

	test_frames();
	s = server_start(NULL, &n);
	test_sizes(s);
	test_pipelined(s, small);
	test_out_of_order(s);
	test_deadline(s, &n);
	test_errors(s);
	test_bad_clients(s);
	test_client_leaves(s, &n);
	test_half_close(s);
	test_client_close_in_flight(s);
	rpc_server_close(s);
	test_server_expiry(&n);
	test_short_methods(&n);
	test_max_connections(&n);
	test_server_max_frame(&n);
	test_server_close_in_flight(&n);
	test_server_close_owed_reply(&n);
	test_idempotent(&n);
	test_refused();
	test_secret(&n);
	return tap_done();
}
