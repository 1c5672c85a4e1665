/*
 * rpc_socket.c - TCP sockets for the RPC client and server: addresses,
 * connect with a deadline, gathered sends, and the frame reader.
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "rpc/rpc_int.h"
#include "util/alloc.h"
#include "util/error.h"

#define READ_CHUNK	((size_t)64 << 10)	/* a reader's least recv */
#define READ_KEEP	((size_t)1 << 20)	/* buffer kept between frames */

int
rpc_address_split(const char *address, char *host, size_t host_size,
    char *port, size_t port_size)
{
	const char *colon, *h = address;
	size_t hn;

	if (address == NULL || (colon = strrchr(address, ':')) == NULL)
		return -EINVAL;
	hn = (size_t)(colon - address);
	if (hn >= 2 && h[0] == '[' && h[hn - 1] == ']') {
		h++;
		hn -= 2;
	} else if (memchr(h, ':', hn) != NULL) {
		return -EINVAL;		/* IPv6 without brackets */
	}
	if (hn == 0 || hn >= host_size || colon[1] == '\0' ||
	    strlen(colon + 1) >= port_size)
		return -EINVAL;
	memcpy(host, h, hn);
	host[hn] = '\0';
	strcpy(port, colon + 1);
	return 0;
}

int
rpc_sockaddr_format(const struct sockaddr *sa, socklen_t len, char *out,
    size_t size)
{
	char host[NI_MAXHOST], port[NI_MAXSERV];
	int n;

	if (getnameinfo(sa, len, host, sizeof(host), port, sizeof(port),
	    NI_NUMERICHOST | NI_NUMERICSERV) != 0)
		return -EINVAL;
	if (sa->sa_family == AF_INET6)
		n = snprintf(out, size, "[%s]:%s", host, port);
	else
		n = snprintf(out, size, "%s:%s", host, port);
	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

/* The addresses of "HOST:PORT", numeric ports only.  0 or -errno. */
static int
resolve(const char *address, bool passive, struct addrinfo **res)
{
	char host[NI_MAXHOST], port[NI_MAXSERV];
	struct addrinfo hints;
	int rc;

	if ((rc = rpc_address_split(address, host, sizeof(host), port,
	    sizeof(port))) < 0)
		return rc;
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0);
	switch (getaddrinfo(host, port, &hints, res)) {
	case 0:
		return 0;
	case EAI_MEMORY:
		return -ENOMEM;
	case EAI_SYSTEM:
		return errno ? -errno : -EIO;
	case EAI_SERVICE:
		return -EINVAL;
	default:
		return -ENOENT;
	}
}

/* Wait until fd is ready for events or deadline_ns passes (0: never).
 * 0, -ETIMEDOUT or -errno. */
static int
wait_fd(int fd, short events, int64_t deadline_ns)
{
	struct pollfd pfd = { .fd = fd, .events = events };
	int64_t left;
	int ms, n;

	for (;;) {
		ms = -1;
		if (deadline_ns != 0) {
			left = deadline_ns - rpc_now_ns();
			if (left <= 0)
				return -ETIMEDOUT;
			ms = left / 1000000 + 1 > 1000000 ? 1000000 :
			    (int)(left / 1000000 + 1);
		}
		n = poll(&pfd, 1, ms);
		if (n > 0)
			return 0;
		if (n < 0 && errno != EINTR)
			return -errno;
	}
}

/* Connect fd to one address by deadline_ns.  0 or -errno. */
static int
connect_one(int fd, const struct addrinfo *ai, int64_t deadline_ns)
{
	socklen_t len = sizeof(int);
	int flags, err = 0, rc;

	if ((flags = fcntl(fd, F_GETFL)) < 0 ||
	    fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0)
		return -errno;
	if (connect(fd, ai->ai_addr, ai->ai_addrlen) < 0) {
		if (errno != EINPROGRESS)
			return -errno;
		if ((rc = wait_fd(fd, POLLOUT, deadline_ns)) < 0)
			return rc;
		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
			return -errno;
		if (err != 0)
			return -err;
	}
	if (fcntl(fd, F_SETFL, flags) < 0)
		return -errno;
	return 0;
}

int
rpc_socket_connect(const char *address, int64_t deadline_ns, int *fdp)
{
	struct addrinfo *res, *ai;
	int fd = -1, one = 1, rc;

	if ((rc = resolve(address, false, &res)) < 0)
		return rc;
	rc = -ENOENT;
	for (ai = res; ai != NULL; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC,
		    ai->ai_protocol);
		if (fd < 0) {
			rc = -errno;
			continue;
		}
		if ((rc = connect_one(fd, ai, deadline_ns)) == 0)
			break;
		close(fd);
		fd = -1;
		if (rc == -ETIMEDOUT)
			break;
	}
	freeaddrinfo(res);
	if (fd < 0)
		return rc;
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	*fdp = fd;
	return 0;
}

int
rpc_socket_listen(const char *address, int *fdp, char **boundp)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	char bound[RPC_ADDRESS_MAX];
	struct addrinfo *res;
	int fd, one = 1, rc;

	if ((rc = resolve(address, true, &res)) < 0)
		return rc;
	fd = socket(res->ai_family, res->ai_socktype | SOCK_CLOEXEC,
	    res->ai_protocol);
	if (fd < 0) {
		rc = -errno;
		goto out_free;
	}
	(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, res->ai_addr, res->ai_addrlen) < 0 ||
	    listen(fd, SOMAXCONN) < 0 ||
	    getsockname(fd, (struct sockaddr *)&ss, &len) < 0) {
		rc = -errno;
		goto out_close;
	}
	if ((rc = rpc_sockaddr_format((struct sockaddr *)&ss, len, bound,
	    sizeof(bound))) < 0)
		goto out_close;
	if ((*boundp = bt_strdup(bound)) == NULL) {
		rc = -ENOMEM;
		goto out_close;
	}
	freeaddrinfo(res);
	*fdp = fd;
	return 0;
out_close:
	close(fd);
out_free:
	freeaddrinfo(res);
	return rc;
}

int
rpc_socket_send(int fd, struct iovec *iov, int iovcnt, int64_t deadline_ns,
    size_t *written)
{
	struct msghdr msg;
	ssize_t w;
	size_t left;
	int rc;

	*written = 0;
	while (iovcnt > 0 && iov->iov_len == 0) {
		iov++;
		iovcnt--;
	}
	while (iovcnt > 0) {
		memset(&msg, 0, sizeof(msg));
		msg.msg_iov = iov;
		msg.msg_iovlen = (size_t)iovcnt;
		w = sendmsg(fd, &msg, MSG_NOSIGNAL |
		    (deadline_ns != 0 ? MSG_DONTWAIT : 0));
		if (w < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				return -errno;
			if (deadline_ns == 0)
				return -ETIMEDOUT;	/* SO_SNDTIMEO */
			if ((rc = wait_fd(fd, POLLOUT, deadline_ns)) < 0)
				return rc;
			continue;
		}
		*written += (size_t)w;
		for (left = (size_t)w; iovcnt > 0 && left >= iov->iov_len;) {
			left -= iov->iov_len;
			iov++;
			iovcnt--;
		}
		if (iovcnt > 0) {
			iov->iov_base = (uint8_t *)iov->iov_base + left;
			iov->iov_len -= left;
		}
	}
	return 0;
}

int
rpc_socket_recv_exact(int fd, void *p, size_t n, int64_t deadline_ns)
{
	size_t got = 0;
	ssize_t r;
	int rc;

	while (got < n) {
		if (deadline_ns != 0 &&
		    (rc = wait_fd(fd, POLLIN, deadline_ns)) < 0)
			return rc;
		r = recv(fd, (uint8_t *)p + got, n - got, 0);
		if (r == 0)
			return -ECONNRESET;
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return errno == EAGAIN || errno == EWOULDBLOCK ?
			    -ETIMEDOUT : -errno;
		}
		got += (size_t)r;
	}
	return 0;
}

void
rpc_reader_init(struct rpc_reader *r, int fd, size_t max_frame)
{
	r->fd = fd;
	r->max_frame = max_frame;
	r->recv_timeout_ns = 0;
	buf_init(&r->in);
	r->off = 0;
	r->last = 0;
}

int
rpc_reader_set_recv_timeout(struct rpc_reader *r, int ms)
{
	struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };

	assert(ms > 0);
	if (setsockopt(r->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0)
		return -errno;
	r->recv_timeout_ns = (int64_t)ms * 1000000;
	return 0;
}

/*
 * Wait for bytes on r's socket until deadline_ns (as rpc_reader_next's):
 * 0 when recv may be called, and *flags its flags.  With an SO_RCVTIMEO
 * that ends before the deadline, recv waits itself (the caller's recv
 * then fails with EAGAIN when it expires, and the caller comes back
 * here); else poll waits.  0 or -ETIMEDOUT or -errno.
 */
static int
reader_wait(struct rpc_reader *r, int64_t deadline_ns, int *flags)
{
	*flags = 0;
	if (deadline_ns < 0) {
		*flags = MSG_DONTWAIT;
		return 0;
	}
	if (deadline_ns == 0)
		return 0;
	if (r->recv_timeout_ns > 0 &&
	    deadline_ns - rpc_now_ns() > r->recv_timeout_ns)
		return 0;
	*flags = MSG_DONTWAIT;	/* poll said there are bytes, or an end */
	return wait_fd(r->fd, POLLIN, deadline_ns);
}

void
rpc_reader_release(struct rpc_reader *r)
{
	buf_release(&r->in);
}

bool
rpc_reader_buffered(const struct rpc_reader *r)
{
	return r->in.n > r->off + r->last;
}

/*
 * Frames are decoded in place; the bytes of a frame not yet whole move to
 * the front of the buffer before the next recv, and a buffer grown for a
 * large frame is given back once empty.
 */
int
rpc_reader_next(struct rpc_reader *r, struct rpc_frame *f, bool *truncated,
    int64_t deadline_ns)
{
	size_t need, have;
	ssize_t got;
	int flags, rc;

	*truncated = false;
	r->off += r->last;
	r->last = 0;
	for (;;) {
		have = r->in.n - r->off;
		rc = rpc_frame_decode(r->in.p + r->off, have, r->max_frame,
		    f, &need);
		if (rc == 0) {
			r->last = need;
			return 0;
		}
		if (rc < 0)
			return rc;
		if (r->off > 0) {
			memmove(r->in.p, r->in.p + r->off, have);
			r->in.n = have;
			r->off = 0;
		}
		if (have == 0 && r->in.cap > READ_KEEP) {
			buf_release(&r->in);
			buf_init(&r->in);
		}
		/* A large frame gets the room it needs, not twice that. */
		need = need - have < READ_CHUNK ? READ_CHUNK : need - have;
		if (r->in.cap - r->in.n < need &&
		    (rc = need > READ_KEEP ? buf_reserve_exact(&r->in, need) :
		    buf_reserve(&r->in, need)) < 0)
			return rc;
		if ((rc = reader_wait(r, deadline_ns, &flags)) < 0)
			return rc;
		got = recv(r->fd, r->in.p + r->in.n, r->in.cap - r->in.n,
		    flags);
		if (got == 0) {
			*truncated = have > 0;
			return have > 0 ? -ECONNRESET : BT_DONE;
		}
		if (got < 0) {
			if (errno == EINTR)
				continue;
			/* SO_RCVTIMEO expired, or poll's bytes were taken:
			 * look at the deadline again */
			if (errno == EWOULDBLOCK && (deadline_ns > 0 ||
			    (deadline_ns == 0 && r->recv_timeout_ns > 0)))
				continue;
			return errno == EWOULDBLOCK ? -EAGAIN : -errno;
		}
		r->in.n += (size_t)got;
	}
}

int
rpc_cond_init(pthread_cond_t *c)
{
	pthread_condattr_t attr;
	int rc;

	if ((rc = pthread_condattr_init(&attr)) != 0)
		return -rc;
	if ((rc = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC)) == 0)
		rc = pthread_cond_init(c, &attr);
	pthread_condattr_destroy(&attr);
	return -rc;
}

struct timespec
rpc_abstime(int64_t deadline_ns)
{
	struct timespec ts;

	ts.tv_sec = (time_t)(deadline_ns / 1000000000);
	ts.tv_nsec = (long)(deadline_ns % 1000000000);
	return ts;
}
