/*
 * rpc_frame.c - frames (rpc/format.h): encoding and decoding.
 */
#include <assert.h>
#include <errno.h>
#include <string.h>
#include <time.h>

#include "rpc/format.h"
#include "rpc/rpc.h"
#include "rpc/rpc_int.h"
#include "util/coding.h"
#include "util/crc32c.h"
#include "util/error.h"

int64_t
rpc_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

uint32_t
rpc_timeout_ms(int64_t deadline_ns, int64_t now_ns)
{
	int64_t left;

	if (deadline_ns == 0)
		return 0;
	left = deadline_ns - now_ns;
	if (left <= 0)
		return 1;
	left = (left + 999999) / 1000000;
	return left > UINT32_MAX ? UINT32_MAX : (uint32_t)left;
}

void
rpc_frame_header_encode(uint8_t hdr[RPC_FRAME_HEADER_SIZE],
    const struct rpc_frame *f)
{
	uint32_t crc;

	assert(f->payload.n <= RPC_MAX_FRAME);
	put_fixed32(hdr, (uint32_t)(RPC_FRAME_MIN_LENGTH + f->payload.n));
	put_fixed64(hdr + 8, f->id);
	put_fixed32(hdr + 16, f->method);
	put_fixed32(hdr + 20, (uint32_t)f->status);
	put_fixed32(hdr + 24, f->timeout_ms);
	crc = crc32c_value(hdr + 8, RPC_FRAME_HEADER_SIZE - 8);
	if (f->payload.n > 0)
		crc = crc32c_extend(crc, f->payload.p, f->payload.n);
	put_fixed32(hdr + 4, crc32c_mask(crc));
}

int
rpc_frame_encode(struct buf *out, const struct rpc_frame *f)
{
	uint8_t hdr[RPC_FRAME_HEADER_SIZE];
	int rc;

	if (f->payload.n > RPC_MAX_FRAME)
		return -EMSGSIZE;
	if ((rc = buf_reserve(out, sizeof(hdr) + f->payload.n)) < 0)
		return rc;
	rpc_frame_header_encode(hdr, f);
	memcpy(out->p + out->n, hdr, sizeof(hdr));
	if (f->payload.n > 0)
		memcpy(out->p + out->n + sizeof(hdr), f->payload.p,
		    f->payload.n);
	out->n += sizeof(hdr) + f->payload.n;
	return 0;
}

/*
 * The length is checked as soon as it is in, before the rest arrives, so
 * that a reader never buffers toward a frame it would refuse.
 */
int
rpc_frame_decode(const uint8_t *p, size_t n, size_t max_frame,
    struct rpc_frame *f, size_t *consumed)
{
	uint32_t length, crc;

	if (n < 4) {
		*consumed = RPC_FRAME_HEADER_SIZE;
		return 1;
	}
	length = get_fixed32(p);
	if (length < RPC_FRAME_MIN_LENGTH)
		return -EPROTO;
	if (length - RPC_FRAME_MIN_LENGTH > max_frame ||
	    length - RPC_FRAME_MIN_LENGTH > RPC_MAX_FRAME)
		return -EMSGSIZE;
	*consumed = 4 + (size_t)length;
	if (n < 4 + (size_t)length)
		return 1;
	crc = crc32c_value(p + 8, (size_t)length - 4);
	if (crc32c_mask(crc) != get_fixed32(p + 4))
		return BT_ECHECKSUM;
	f->id = get_fixed64(p + 8);
	f->method = get_fixed32(p + 16);
	f->status = (int32_t)get_fixed32(p + 20);
	f->timeout_ms = get_fixed32(p + 24);
	f->payload = slice_make(p + RPC_FRAME_HEADER_SIZE,
	    (size_t)length - RPC_FRAME_MIN_LENGTH);
	return 0;
}
