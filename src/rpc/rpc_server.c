/*
 * rpc_server.c - the RPC server: options, the accept thread, and the
 * order of closing (rpc_server_int.h has the notes cited here; rpc_conn.c
 * runs the connections).
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "rpc/rpc_server_int.h"
#include "util/alloc.h"
#include "util/error.h"

#define DEFAULT_WORKERS		8
#define DEFAULT_MAX_CONNECTIONS	256
#define DEFAULT_SEND_TIMEOUT_MS	10000
#define DEFAULT_MAX_INFLIGHT	256
#define FULL_LOG_INTERVAL_NS	1000000000	/* "too many" once a second */

void
rpc_server_log(const struct rpc_server *s, const char *peer,
    const char *fmt, ...)
{
	char line[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	fprintf(stderr, "rpc server %s: peer %s: %s\n", s->address, peer, line);
}

/* opts with every 0 field given its default.  0 or -EINVAL. */
static int
server_options(const struct rpc_server_options *opts,
    struct rpc_server_options *out)
{
	static const struct rpc_server_options none;

	*out = opts != NULL ? *opts : none;
	if (out->workers < 0 || out->max_connections < 0 ||
	    out->send_timeout_ms < 0 || out->max_inflight_per_connection < 0 ||
	    out->max_frame > RPC_MAX_FRAME)
		return -EINVAL;
	if (out->workers == 0)
		out->workers = DEFAULT_WORKERS;
	if (out->max_connections == 0)
		out->max_connections = DEFAULT_MAX_CONNECTIONS;
	if (out->max_frame == 0)
		out->max_frame = RPC_MAX_FRAME;
	if (out->send_timeout_ms == 0)
		out->send_timeout_ms = DEFAULT_SEND_TIMEOUT_MS;
	if (out->max_inflight_per_connection == 0)
		out->max_inflight_per_connection = DEFAULT_MAX_INFLIGHT;
	return 0;
}

/* Take one connection off the listening socket (a connection over
 * max_connections is closed at once). */
static void
server_accept(struct rpc_server *s)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	char peer[RPC_ADDRESS_MAX];
	int64_t now;
	int fd, rc;

	fd = accept4(s->listen_fd, (struct sockaddr *)&ss, &len, SOCK_CLOEXEC);
	if (fd < 0) {
		if (errno == EMFILE || errno == ENFILE) {
			rpc_server_log(s, "-", "accept: %s", strerror(errno));
			usleep(100000);
		}
		return;
	}
	if (rpc_sockaddr_format((struct sockaddr *)&ss, len, peer,
	    sizeof(peer)) < 0)
		snprintf(peer, sizeof(peer), "?");
	mutex_lock(&s->mu);
	if (s->closing) {
		mutex_unlock(&s->mu);
		close(fd);
		return;
	}
	if (s->nlive >= s->opts.max_connections) {
		mutex_unlock(&s->mu);
		close(fd);
		now = rpc_now_ns();
		if (now - s->full_logged_ns >= FULL_LOG_INTERVAL_NS) {
			s->full_logged_ns = now;
			rpc_server_log(s, peer, "over %d connections; closed",
			    s->opts.max_connections);
		}
		return;
	}
	rc = rpc_conn_start(s, fd, peer);
	mutex_unlock(&s->mu);
	if (rc < 0)
		rpc_server_log(s, peer, "cannot serve: %s", bt_strerror(rc));
}

/* The accept thread: takes connections and frees those that ended (note
 * 3), until a byte arrives on s->wake[0]. */
static void *
server_listen(void *arg)
{
	struct rpc_server *s = arg;
	struct pollfd pfd[2] = {
		{ .fd = s->listen_fd, .events = POLLIN },
		{ .fd = s->wake[0], .events = POLLIN },
	};

	for (;;) {
		if (poll(pfd, 2, RPC_REAP_INTERVAL_MS) < 0) {
			if (errno == EINTR)
				continue;
			rpc_server_log(s, "-", "poll: %s", strerror(errno));
			usleep(100000);
			continue;
		}
		if (pfd[1].revents != 0)
			break;
		if (pfd[0].revents != 0)
			server_accept(s);
		rpc_conn_reap(s);
	}
	return NULL;
}

int
rpc_server_open(const char *address, const struct rpc_server_options *opts,
    rpc_handler_fn handler, void *arg, struct rpc_server **out)
{
	struct rpc_server *s;
	int rc;

	assert(handler != NULL);
	if ((s = bt_calloc(1, sizeof(*s))) == NULL)
		return -ENOMEM;
	if ((rc = server_options(opts, &s->opts)) < 0)
		goto out_free;
	if (s->opts.secret != NULL) {
		memcpy(s->secret, s->opts.secret, RPC_SECRET_SIZE);
		s->key = s->secret;
	}
	s->opts.secret = NULL;	/* not kept: the caller's may go */
	s->handler = handler;
	s->arg = arg;
	atomic_init(&s->refused, 0);
	s->refused_logged_ns = rpc_now_ns() - RPC_REFUSED_LOG_NS;
	s->tail = &s->head;
	s->full_logged_ns = rpc_now_ns() - FULL_LOG_INTERVAL_NS;
	if ((s->workers = bt_calloc((size_t)s->opts.workers,
	    sizeof(*s->workers))) == NULL) {
		rc = -ENOMEM;
		goto out_free;
	}
	if ((rc = mutex_init(&s->mu)) < 0)
		goto out_workers;
	if ((rc = -pthread_cond_init(&s->work, NULL)) < 0)
		goto out_mutex;
	if ((rc = -pthread_cond_init(&s->idle, NULL)) < 0)
		goto out_work;
	if (pipe2(s->wake, O_CLOEXEC) < 0) {
		rc = -errno;
		goto out_idle;
	}
	if ((rc = rpc_socket_listen(address, &s->listen_fd, &s->address)) < 0)
		goto out_pipe;
	if (fcntl(s->listen_fd, F_SETFL, O_NONBLOCK) < 0) {
		rc = -errno;
		goto out_listen;
	}
	for (; s->nworkers < s->opts.workers; s->nworkers++)
		if ((rc = -pthread_create(&s->workers[s->nworkers], NULL,
		    rpc_conn_work, s)) < 0)
			goto out_threads;
	if ((rc = -pthread_create(&s->acceptor, NULL, server_listen, s)) < 0)
		goto out_threads;
	*out = s;
	return 0;
out_threads:
	mutex_lock(&s->mu);
	s->closing = true;
	pthread_cond_broadcast(&s->work);
	mutex_unlock(&s->mu);
	for (int i = 0; i < s->nworkers; i++)
		pthread_join(s->workers[i], NULL);
out_listen:
	close(s->listen_fd);
	bt_free(s->address);
out_pipe:
	close(s->wake[0]);
	close(s->wake[1]);
out_idle:
	pthread_cond_destroy(&s->idle);
out_work:
	pthread_cond_destroy(&s->work);
out_mutex:
	mutex_destroy(&s->mu);
out_workers:
	bt_free(s->workers);
out_free:
	explicit_bzero(s->secret, sizeof(s->secret));
	bt_free(s);
	return rc;
}

const char *
rpc_server_address(const struct rpc_server *s)
{
	return s->address;
}

uint64_t
rpc_server_refused(const struct rpc_server *s)
{
	return atomic_load(&((struct rpc_server *)s)->refused);
}

/*
 * The order matters: no new connection (the acceptor is gone), no new job
 * (note 4), every reader woken (its socket shut down, its wait for room
 * given up) and every reply still owed cut short (a client that ended its
 * stream but does not read would hold a worker), the workers joined once
 * the handlers running have returned, then every connection freed.
 */
void
rpc_server_close(struct rpc_server *s)
{
	struct rpc_conn *conn;
	ssize_t w;

	if (s == NULL)
		return;
	mutex_lock(&s->mu);
	s->closing = true;
	mutex_unlock(&s->mu);
	do
		w = write(s->wake[1], "", 1);
	while (w < 0 && errno == EINTR);
	assert(w == 1);
	pthread_join(s->acceptor, NULL);

	mutex_lock(&s->mu);
	for (conn = s->live; conn != NULL; conn = conn->next) {
		(void)shutdown(conn->fd, SHUT_RDWR);
		pthread_cond_broadcast(&conn->room);
	}
	for (conn = s->done; conn != NULL; conn = conn->next)
		(void)shutdown(conn->fd, SHUT_RDWR);	/* replies owed */
	pthread_cond_broadcast(&s->work);
	mutex_unlock(&s->mu);
	for (int i = 0; i < s->nworkers; i++)
		pthread_join(s->workers[i], NULL);

	mutex_lock(&s->mu);
	while (s->nlive > 0)
		cond_wait(&s->idle, &s->mu);
	assert(s->head == NULL);
	mutex_unlock(&s->mu);
	rpc_conn_reap(s);
	assert(s->done == NULL);

	close(s->listen_fd);
	close(s->wake[0]);
	close(s->wake[1]);
	bt_free(s->address);
	pthread_cond_destroy(&s->idle);
	pthread_cond_destroy(&s->work);
	mutex_destroy(&s->mu);
	bt_free(s->workers);
	explicit_bzero(s->secret, sizeof(s->secret));
	bt_free(s);
}
