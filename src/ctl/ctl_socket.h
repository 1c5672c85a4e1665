/*
 * ctl_socket.h - the control socket: how tabletctl hands a command to the
 * daemon that has the store mounted (docs/design.md section 3, tabletctl(1)).
 *
 * The daemon listens on STORE/tabletfs.sock (mode 0600) and serves one
 * connection at a time, from a peer with its own uid only.  A connection
 * carries one request and one response; integers are fixed32 (little-
 * endian, util/coding.h):
 *
 *	request  = magic "TFC1" (0x31434654), argc (1..256),
 *		   argc times { length, bytes }	(no NUL inside),
 *		   stdin length, bytes
 *	response = exit status, stdout length, bytes,
 *		   stderr length, bytes
 *
 * The words are STORE as the user named it (for messages), then the verb
 * and its arguments.  The client makes the FILE of `import T FILE`
 * absolute, and sends its standard input, read to the end, only for
 * `import T -` (else an empty stdin).  A request over CTL_SOCKET_MAX_ARGS
 * bytes of words or CTL_SOCKET_MAX_STDIN of stdin, or malformed, gets the
 * exit status 1 and "tabletctl: malformed request" on stderr.
 */
#ifndef TABLETFS_CTL_CTL_SOCKET_H
#define TABLETFS_CTL_CTL_SOCKET_H

#include <stddef.h>
#include <stdint.h>

#define CTL_SOCKET_NAME		"tabletfs.sock"
#define CTL_SOCKET_MAGIC	0x31434654u	/* "TFC1" */
#define CTL_SOCKET_MAX_ARGC	256
#define CTL_SOCKET_MAX_ARGS	(1u << 20)	/* bytes of words in all */
#define CTL_SOCKET_MAX_STDIN	(256u << 20)
#define CTL_SOCKET_MALFORMED	"tabletctl: malformed request\n"

/* A decoded request; words are NUL-terminated. */
struct ctl_request {
	int argc;
	char **argv;
	uint8_t *in;
	size_t in_len;
};

/* Write everything, or a negative errno (EPIPE rather than SIGPIPE). */
int ctl_socket_write(int fd, const void *p, size_t n);
/* Encode and send a request; 0 or a negative errno. */
int ctl_socket_send_request(int fd, int argc, char *const *argv,
    const void *in, size_t in_len);
/*
 * Receive and check a request into *req (freed with
 * ctl_request_release).  0; -EPROTO if it is malformed or too big; other
 * negative errnos from recv (-EAGAIN on the socket's timeout).
 */
int ctl_socket_read_request(int fd, struct ctl_request *req);
void ctl_request_release(struct ctl_request *req);
/* Send a response; 0 or a negative errno. */
int ctl_socket_send_response(int fd, int status, const void *out,
    size_t out_len, const void *err, size_t err_len);
/*
 * Receive a response: the exit status, and stdout and stderr in buffers
 * the caller frees.  0; -EPROTO if it is cut short.
 */
int ctl_socket_read_response(int fd, int *status, char **out,
    size_t *out_len, char **err, size_t *err_len);

#endif
