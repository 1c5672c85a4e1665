/*
 * rttprobe - the floor under a cell's calls: a TCP round trip over
 * loopback between two threads of one process, the bytes of a small
 * request each way, with nothing done in between.
 *
 *	rttprobe [--bytes B] [--count N] [--rounds R] [--fork]
 *
 * An echo thread accepts one connection on 127.0.0.1 (TCP_NODELAY, as
 * src/rpc sets it) and sends back every B bytes (100) it receives; the
 * main thread sends B bytes and waits for them N times (20000) per round,
 * R rounds (3).  Each round trip crosses the kernel twice and wakes the
 * other thread twice, as a call to a tablet server must at the least.
 * With --fork the echo runs in a child process instead, as a tablet
 * server does: each wakeup then switches address spaces too.
 *
 * Standard output, one line: the median round's round trips per second,
 * then the p50 and p99 of a round trip over all rounds:
 *	rtt/s N p50_us X p99_us Y bytes B
 * Each round is a line on standard error.  Exit status 1 on an error.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/bench.h"

#define MAX_ROUNDS	100

static void __attribute__((noreturn))
usage(void)
{
	fprintf(stderr, "usage: rttprobe [--bytes B] [--count N] "
	    "[--rounds R] [--fork]\n");
	exit(2);
}

static void __attribute__((noreturn))
die(const char *what)
{
	fprintf(stderr, "rttprobe: %s: %s\n", what, strerror(errno));
	exit(1);
}

/* Move exactly n bytes; false at the end of the stream or on an error. */
static bool
send_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return false;
		p += w;
		n -= (size_t)w;
	}
	return true;
}

static bool
recv_all(int fd, char *p, size_t n)
{
	while (n > 0) {
		ssize_t r = recv(fd, p, n, 0);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return false;
		p += r;
		n -= (size_t)r;
	}
	return true;
}

struct echo {
	int listen_fd;
	size_t bytes;
	bool fork;		/* a child process echoes, not a thread */
	pid_t child;
};

/* The echo thread: one connection, every message back until it ends. */
static void *
echo_run(void *arg)
{
	struct echo *e = arg;
	char *buf = malloc(e->bytes);
	int one = 1, fd;

	if (buf == NULL || (fd = accept(e->listen_fd, NULL, NULL)) < 0)
		die("accept");
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	while (recv_all(fd, buf, e->bytes) && send_all(fd, buf, e->bytes))
		;
	close(fd);
	free(buf);
	return NULL;
}

/* A connected pair: the echo thread's end and the returned one. */
static int
probe_connect(struct echo *e, pthread_t *thread)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
	    .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sa);
	int one = 1, fd;

	if ((e->listen_fd = socket(AF_INET, SOCK_STREAM, 0)) < 0 ||
	    bind(e->listen_fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(e->listen_fd, 1) < 0 ||
	    getsockname(e->listen_fd, (struct sockaddr *)&sa, &len) < 0)
		die("listen");
	if (e->fork) {
		if ((e->child = fork()) < 0)
			die("fork");
		if (e->child == 0) {
			echo_run(e);
			_exit(0);
		}
	} else if ((errno = pthread_create(thread, NULL, echo_run, e)) != 0) {
		die("pthread_create");
	}
	if ((fd = socket(AF_INET, SOCK_STREAM, 0)) < 0 ||
	    connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		die("connect");
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "bytes", required_argument, NULL, 'b' },
		{ "count", required_argument, NULL, 'n' },
		{ "rounds", required_argument, NULL, 'r' },
		{ "fork", no_argument, NULL, 'f' },
		{ NULL, 0, NULL, 0 },
	};
	struct echo e = { .bytes = 100 };
	unsigned long count = 20000, rounds = 3;
	double rates[MAX_ROUNDS];
	struct bench_hist hist;
	pthread_t thread;
	char *buf;
	int c, fd;

	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		char *end;
		unsigned long v;

		if (c == 'f') {
			e.fork = true;
			continue;
		}
		if (optarg == NULL)
			usage();
		errno = 0;
		v = strtoul(optarg, &end, 10);
		if (errno != 0 || *end != '\0' || v == 0)
			usage();
		if (c == 'b')
			e.bytes = v;
		else if (c == 'n')
			count = v;
		else if (c == 'r' && v <= MAX_ROUNDS)
			rounds = v;
		else
			usage();
	}
	if (optind != argc || e.bytes > (1u << 20))
		usage();
	if ((buf = calloc(1, e.bytes)) == NULL)
		die("malloc");
	memset(&hist, 0, sizeof(hist));
	fd = probe_connect(&e, &thread);
	for (unsigned long r = 0; r < rounds; r++) {
		uint64_t start = bench_now_ns();

		for (unsigned long i = 0; i < count; i++) {
			uint64_t t0 = bench_now_ns();

			if (!send_all(fd, buf, e.bytes) ||
			    !recv_all(fd, buf, e.bytes))
				die("round trip");
			bench_hist_add(&hist, bench_now_ns() - t0);
		}
		rates[r] = count * 1e9 / (double)(bench_now_ns() - start);
		fprintf(stderr, "rttprobe: round %lu: %.0f round trips/s\n",
		    r + 1, rates[r]);
	}
	close(fd);
	if (e.fork)
		waitpid(e.child, NULL, 0);
	else
		pthread_join(thread, NULL);
	close(e.listen_fd);
	qsort(rates, rounds, sizeof(rates[0]), cmp_double);
	printf("rtt/s %.0f p50_us %.1f p99_us %.1f bytes %zu\n",
	    rates[rounds / 2], bench_hist_quantile(&hist, 0.50) / 1000,
	    bench_hist_quantile(&hist, 0.99) / 1000, e.bytes);
	free(buf);
	return 0;
}
