/*
 * nfq_delay.c - a stand-in for netem's delay, which this kernel lacks
 * (/work/shared/recipes/netns.md): every packet that an nft rule sends to
 * NFQUEUE queue Q is held DELAY ms, in order, then accepted.
 *
 *	nfq_delay Q DELAY_MS
 *
 * Runs inside a namespace whose egress rule is `queue num Q bypass`, so
 * that packets flow undelayed once it exits.  Built and run by
 * tests/cluster/test_cluster_delay_loss.sh.
 */
#include <arpa/inet.h>		/* before linux/netfilter.h */
#include <libnetfilter_queue/libnetfilter_queue.h>
#include <linux/netfilter.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>

#define HELD_MAX 65536

struct held {
	uint32_t id;
	int64_t due_ns;
};

struct delayer {
	struct held q[HELD_MAX];
	unsigned head, tail;
	int64_t delay_ns;
};

static int64_t
now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static int
on_packet(struct nfq_q_handle *qh, struct nfgenmsg *msg, struct nfq_data *nfa,
    void *arg)
{
	struct delayer *d = arg;
	uint32_t id = ntohl(nfq_get_msg_packet_hdr(nfa)->packet_id);

	(void)msg;
	if (d->tail - d->head == HELD_MAX)	/* full: as a queue would */
		return nfq_set_verdict(qh, id, NF_DROP, 0, NULL);
	d->q[d->tail % HELD_MAX].id = id;
	d->q[d->tail % HELD_MAX].due_ns = now_ns() + d->delay_ns;
	d->tail++;
	return 0;
}

int
main(int argc, char **argv)
{
	static struct delayer d;
	struct nfq_q_handle *qh;
	struct nfq_handle *h;
	char buf[65536];
	int fd;

	if (argc != 3) {
		fprintf(stderr, "usage: nfq_delay QUEUE DELAY_MS\n");
		return 2;
	}
	d.delay_ns = (int64_t)atoi(argv[2]) * 1000000;
	if ((h = nfq_open()) == NULL || nfq_bind_pf(h, AF_INET) < 0) {
		perror("nfq_delay: nfq_open");
		return 1;
	}
	qh = nfq_create_queue(h, (uint16_t)atoi(argv[1]), on_packet, &d);
	if (qh == NULL || nfq_set_mode(qh, NFQNL_COPY_META, 0) < 0) {
		perror("nfq_delay: nfq_create_queue");
		return 1;
	}
	nfq_set_queue_maxlen(qh, HELD_MAX);
	nfnl_rcvbufsiz(nfq_nfnlh(h), 8 << 20);
	fd = nfq_fd(h);
	for (;;) {
		int64_t wait_ms = 1000;
		struct pollfd p = { fd, POLLIN, 0 };
		int n;

		if (d.head != d.tail) {
			wait_ms = (d.q[d.head % HELD_MAX].due_ns - now_ns()) /
			    1000000 + 1;
			if (wait_ms < 0)
				wait_ms = 0;
		}
		if (poll(&p, 1, (int)wait_ms) > 0 &&
		    (n = (int)recv(fd, buf, sizeof(buf), MSG_DONTWAIT)) > 0)
			nfq_handle_packet(h, buf, n);
		for (int64_t t = now_ns(); d.head != d.tail &&
		    d.q[d.head % HELD_MAX].due_ns <= t; d.head++)
			nfq_set_verdict(qh, d.q[d.head % HELD_MAX].id,
			    NF_ACCEPT, 0, NULL);
	}
}
