/*
 * rpc_int.h - what the client and the server of src/rpc share: frame
 * headers for a gathered send, sockets, and a frame reader.
 */
#ifndef TABLETFS_RPC_RPC_INT_H
#define TABLETFS_RPC_RPC_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>

#include "rpc/format.h"
#include "rpc/rpc.h"
#include "util/buf.h"

/*
 * Write f's header (format.h) into hdr, its crc covering f->payload too,
 * so that header and payload can leave in one sendmsg without a copy.
 * f->payload.n must be at most RPC_MAX_FRAME (asserted).
 */
void rpc_frame_header_encode(uint8_t hdr[RPC_FRAME_HEADER_SIZE],
    const struct rpc_frame *f);

/* timeout_ms for a request sent now with deadline_ns: 0 for none, else
 * the milliseconds left rounded up, at least 1. */
uint32_t rpc_timeout_ms(int64_t deadline_ns, int64_t now_ns);

/*
 * Split "HOST:PORT" or "[V6ADDR]:PORT" into host and port, NUL-terminated
 * in the buffers given.  0 or -EINVAL.
 */
int rpc_address_split(const char *address, char *host, size_t host_size,
    char *port, size_t port_size);

/* "HOST:PORT" (IPv6 in brackets) of sa into out[0..size).  0 or -errno. */
int rpc_sockaddr_format(const struct sockaddr *sa, socklen_t len, char *out,
    size_t size);
#define RPC_ADDRESS_MAX	64	/* room for any rpc_sockaddr_format() */

/*
 * A connected TCP socket to address by deadline_ns, blocking, close-on-
 * exec, with TCP_NODELAY.  0 and *fdp, or -ECONNREFUSED, -ETIMEDOUT,
 * -EINVAL, -ENOENT (no such host), another -errno.
 */
int rpc_socket_connect(const char *address, int64_t deadline_ns, int *fdp);

/* A listening TCP socket on address, and the address it is bound to
 * (owned by the caller, bt_free).  0 or -errno. */
int rpc_socket_listen(const char *address, int *fdp, char **boundp);

/*
 * Send the iovecs whole, without SIGPIPE.  With deadline_ns, waits no
 * later than it (-ETIMEDOUT); without, as long as the socket's
 * SO_SNDTIMEO (its expiry is -ETIMEDOUT too).  *written counts the bytes
 * that left, in every case.  0 or -errno.  The iovecs are consumed.
 */
int rpc_socket_send(int fd, struct iovec *iov, int iovcnt,
    int64_t deadline_ns, size_t *written);

/* Receive exactly n bytes by deadline_ns (0: no deadline beyond the
 * socket's SO_RCVTIMEO).  0, -ECONNRESET at end of stream, -ETIMEDOUT,
 * another -errno. */
int rpc_socket_recv_exact(int fd, void *p, size_t n, int64_t deadline_ns);

/*
 * The frames arriving on a socket, read in large chunks.  One thread at a
 * time reads; rpc_reader_next's frame borrows the reader's buffer until
 * the next call.
 */
struct rpc_reader {
	int fd;
	size_t max_frame;
	int64_t recv_timeout_ns;	/* the socket's SO_RCVTIMEO; 0: none */
	struct buf in;
	size_t off;		/* where the next frame starts in in */
	size_t last;		/* bytes of the frame returned last */
};

void rpc_reader_init(struct rpc_reader *r, int fd, size_t max_frame);
void rpc_reader_release(struct rpc_reader *r);
/*
 * Give r's socket an SO_RCVTIMEO of ms, so that a wait with a deadline
 * farther off than that blocks in recv itself, one system call, instead
 * of in poll and then recv: each wakes again at least every ms to look
 * at its deadline, and the last stretch before a deadline is a poll.
 * 0 or -errno.
 */
int rpc_reader_set_recv_timeout(struct rpc_reader *r, int ms);
/*
 * The next frame, waiting for it until deadline_ns (0: as long as it
 * takes; negative: not at all, only what has arrived counts).  0 and *f;
 * BT_DONE at the end of the stream between frames; -ECONNRESET at the end
 * of the stream inside a frame (*truncated set); -ETIMEDOUT past the
 * deadline or -EAGAIN without waiting, when no whole frame has come (the
 * bytes of one that has begun stay for the next call); a bad frame's code
 * (rpc_frame_decode), a recv error, -ENOMEM.
 */
int rpc_reader_next(struct rpc_reader *r, struct rpc_frame *f,
    bool *truncated, int64_t deadline_ns);
/* Whether bytes past the frame rpc_reader_next returned last have been
 * received already (another frame, whole or in part). */
bool rpc_reader_buffered(const struct rpc_reader *r);

/*
 * The handshake (format.h; rpc_auth.c).  rpc_auth_random fills p with n
 * bytes from getrandom(2): 0 or -errno.  rpc_auth_proof computes the
 * proof of label (RPC_LABEL_SERVER or RPC_LABEL_CLIENT) for the two
 * nonces with secret (RPC_SECRET_SIZE bytes; NULL: the empty key), and
 * rpc_auth_check says whether proof is that, comparing in constant time.
 */
int rpc_auth_random(uint8_t *p, size_t n);
void rpc_auth_proof(const uint8_t *secret, const char *label,
    const uint8_t client_nonce[RPC_NONCE_SIZE],
    const uint8_t server_nonce[RPC_NONCE_SIZE],
    uint8_t proof[RPC_PROOF_SIZE]);
bool rpc_auth_check(const uint8_t *secret, const char *label,
    const uint8_t client_nonce[RPC_NONCE_SIZE],
    const uint8_t server_nonce[RPC_NONCE_SIZE],
    const uint8_t proof[RPC_PROOF_SIZE]);

/* A condition variable whose timed waits take CLOCK_MONOTONIC times
 * (rpc_abstime()).  0 or -errno. */
int rpc_cond_init(pthread_cond_t *c);
/* deadline_ns as the abstime of such a condition variable's wait. */
struct timespec rpc_abstime(int64_t deadline_ns);

#endif
