/*
 * ctl_socket.c - encoding of the control socket's requests and responses
 * (ctl_socket.h), shared by tabletctl and the daemon.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ctl/ctl_socket.h"
#include "util/coding.h"

int
ctl_socket_write(int fd, const void *p, size_t n)
{
	const uint8_t *b = p;
	ssize_t w;

	while (n > 0) {
		if ((w = send(fd, b, n, MSG_NOSIGNAL)) < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		b += w;
		n -= (size_t)w;
	}
	return 0;
}

/* The first allocation of read_bytes; it doubles from there. */
#define READ_BYTES_FIRST	(64u << 10)

/* Read exactly n bytes; -EPROTO at an early end of stream. */
static int
read_full(int fd, void *p, size_t n)
{
	uint8_t *b = p;
	ssize_t r;

	while (n > 0) {
		if ((r = read(fd, b, n)) < 0) {
			if (errno == EINTR)
				continue;
			return errno == EWOULDBLOCK ? -EAGAIN : -errno;
		}
		if (r == 0)
			return -EPROTO;
		b += r;
		n -= (size_t)r;
	}
	return 0;
}

static int
read_u32(int fd, uint32_t *v)
{
	uint8_t b[4];
	int rc;

	if ((rc = read_full(fd, b, sizeof(b))) < 0)
		return rc;
	*v = get_fixed32(b);
	return 0;
}

static int
write_u32(int fd, uint32_t v)
{
	uint8_t b[4];

	put_fixed32(b, v);
	return ctl_socket_write(fd, b, sizeof(b));
}

/*
 * A length and that many bytes, read into a new NUL-terminated buffer.
 * The buffer grows as the bytes arrive, so a peer that announces a large
 * length costs memory only for what it really sends.
 */
static int
read_bytes(int fd, uint32_t max, char **out, size_t *len)
{
	size_t have = 0, cap;
	uint32_t n;
	char *p = NULL, *q;
	int rc;

	if ((rc = read_u32(fd, &n)) < 0)
		return rc;
	if (n > max)
		return -EPROTO;
	cap = n < READ_BYTES_FIRST ? n : READ_BYTES_FIRST;
	for (;;) {
		if ((q = realloc(p, cap + 1)) == NULL) {
			rc = -ENOMEM;
			goto out_free;
		}
		p = q;
		if ((rc = read_full(fd, p + have, cap - have)) < 0)
			goto out_free;
		have = cap;
		if (have == n)
			break;
		cap = n - have < have ? n : 2 * have;
	}
	p[n] = '\0';
	*out = p;
	*len = n;
	return 0;
out_free:
	free(p);
	return rc;
}

int
ctl_socket_send_request(int fd, int argc, char *const *argv, const void *in,
    size_t in_len)
{
	size_t n;
	int rc;

	if (argc < 1 || argc > CTL_SOCKET_MAX_ARGC ||
	    in_len > CTL_SOCKET_MAX_STDIN)
		return -E2BIG;
	if ((rc = write_u32(fd, CTL_SOCKET_MAGIC)) < 0 ||
	    (rc = write_u32(fd, (uint32_t)argc)) < 0)
		return rc;
	for (int i = 0; i < argc; i++) {
		n = strlen(argv[i]);
		if (n > CTL_SOCKET_MAX_ARGS)
			return -E2BIG;
		if ((rc = write_u32(fd, (uint32_t)n)) < 0 ||
		    (rc = ctl_socket_write(fd, argv[i], n)) < 0)
			return rc;
	}
	if ((rc = write_u32(fd, (uint32_t)in_len)) < 0 ||
	    (rc = ctl_socket_write(fd, in, in_len)) < 0)
		return rc;
	return 0;
}

void
ctl_request_release(struct ctl_request *req)
{
	if (req->argv != NULL)
		for (int i = 0; i < req->argc; i++)
			free(req->argv[i]);
	free(req->argv);
	free(req->in);
	memset(req, 0, sizeof(*req));
}

int
ctl_socket_read_request(int fd, struct ctl_request *req)
{
	uint32_t magic, argc, left = CTL_SOCKET_MAX_ARGS;
	size_t n;
	char *in;
	int rc;

	memset(req, 0, sizeof(*req));
	if ((rc = read_u32(fd, &magic)) < 0 ||
	    (rc = read_u32(fd, &argc)) < 0)
		return rc;
	if (magic != CTL_SOCKET_MAGIC || argc < 1 ||
	    argc > CTL_SOCKET_MAX_ARGC)
		return -EPROTO;
	/* One more, NULL, as for main's argv. */
	if ((req->argv = calloc(argc + 1, sizeof(*req->argv))) == NULL)
		return -ENOMEM;
	for (req->argc = 0; req->argc < (int)argc; req->argc++) {
		if ((rc = read_bytes(fd, left, &req->argv[req->argc],
		    &n)) < 0)
			goto out;
		left -= (uint32_t)n;
		if (strlen(req->argv[req->argc]) != n) {
			req->argc++;
			rc = -EPROTO;
			goto out;
		}
	}
	if ((rc = read_bytes(fd, CTL_SOCKET_MAX_STDIN, &in, &n)) < 0)
		goto out;
	req->in = (uint8_t *)in;
	req->in_len = n;
	return 0;
out:
	ctl_request_release(req);
	return rc;
}

int
ctl_socket_send_response(int fd, int status, const void *out,
    size_t out_len, const void *err, size_t err_len)
{
	int rc;

	if (out_len > UINT32_MAX || err_len > UINT32_MAX)
		return -E2BIG;
	if ((rc = write_u32(fd, (uint32_t)status)) < 0 ||
	    (rc = write_u32(fd, (uint32_t)out_len)) < 0 ||
	    (rc = ctl_socket_write(fd, out, out_len)) < 0 ||
	    (rc = write_u32(fd, (uint32_t)err_len)) < 0 ||
	    (rc = ctl_socket_write(fd, err, err_len)) < 0)
		return rc;
	return 0;
}

int
ctl_socket_read_response(int fd, int *status, char **out, size_t *out_len,
    char **err, size_t *err_len)
{
	uint32_t st;
	int rc;

	if ((rc = read_u32(fd, &st)) < 0 ||
	    (rc = read_bytes(fd, UINT32_MAX, out, out_len)) < 0)
		return rc;
	if ((rc = read_bytes(fd, UINT32_MAX, err, err_len)) < 0) {
		free(*out);
		return rc;
	}
	*status = (int)st;
	return 0;
}
