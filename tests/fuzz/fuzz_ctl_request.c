/*
 * fuzz_ctl_request.c - a control-socket request as the daemon decodes it
 * (ctl_socket_read_request, src/ctl/ctl_socket.c), read from a file
 * holding the input bytes in place of the peer's socket.  A request is
 * refused (-EPROTO) or decodes to 1..CTL_SOCKET_MAX_ARGC NUL-terminated
 * words within the size limits, NULL after the last, and a stdin within
 * its limit; a request the client encodes is read back unchanged.
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ctl/ctl_socket.h"
#include "fuzz.h"

/* A file holding n bytes, positioned at its start. */
static int
file_of(const void *p, size_t n)
{
	int fd;

	FUZZ_CHECK((fd = memfd_create("fuzz", 0)) >= 0);
	FUZZ_CHECK(n == 0 || write(fd, p, n) == (ssize_t)n);
	FUZZ_CHECK(lseek(fd, 0, SEEK_SET) == 0);
	return fd;
}

static void
check_round_trip(const struct ctl_request *req)
{
	struct ctl_request back;
	int sv[2];

	FUZZ_CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	FUZZ_CHECK(ctl_socket_send_request(sv[0], req->argc, req->argv,
	    req->in, req->in_len) == 0);
	shutdown(sv[0], SHUT_WR);
	FUZZ_CHECK(ctl_socket_read_request(sv[1], &back) == 0);
	FUZZ_CHECK(back.argc == req->argc && back.in_len == req->in_len);
	for (int i = 0; i < req->argc; i++)
		FUZZ_CHECK(strcmp(back.argv[i], req->argv[i]) == 0);
	FUZZ_CHECK(req->in_len == 0 ||
	    memcmp(back.in, req->in, req->in_len) == 0);
	ctl_request_release(&back);
	close(sv[0]);
	close(sv[1]);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ctl_request req;
	size_t words = 0;
	int fd, rc;

	fd = file_of(data, size);
	rc = ctl_socket_read_request(fd, &req);
	close(fd);
	if (rc < 0) {
		FUZZ_CHECK(rc == -EPROTO || rc == -ENOMEM);
		FUZZ_CHECK(req.argv == NULL && req.in == NULL);
		return 0;
	}
	FUZZ_CHECK(req.argc >= 1 && req.argc <= CTL_SOCKET_MAX_ARGC);
	FUZZ_CHECK(req.argv[req.argc] == NULL);
	for (int i = 0; i < req.argc; i++)
		words += strlen(req.argv[i]);
	FUZZ_CHECK(words <= CTL_SOCKET_MAX_ARGS);
	FUZZ_CHECK(req.in_len <= CTL_SOCKET_MAX_STDIN);

	/* Encoded again by the client's code, it reads back unchanged
	 * (through a socket pair, so only what fits in its buffer). */
	if (size <= 32768)
		check_round_trip(&req);
	ctl_request_release(&req);
	return 0;
}
