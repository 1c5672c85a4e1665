/*
 * fuzz_rpc_frame.c - RPC frames (src/rpc/rpc_frame.c) as a connection's
 * reader decodes them: frame after frame from the front of a stream, each
 * one whole and re-encoding to its own bytes, or "more bytes needed" with
 * a size past the input, or a bad frame's code; a frame's every proper
 * prefix asks for more bytes, never for a different size.
 *
 * The first input byte is a flag: when odd, each frame's crc is recomputed
 * along the chain of lengths, so that the fuzzer reaches the fields; its
 * next bits choose the decoder's max_frame, small or the largest.
 *
 * The handshake's check of a proof (src/rpc/rpc_auth.c) takes the input's
 * first bytes as the two nonces and a proof: it passes exactly when the
 * proof is the one computed, and fails with any one byte of that changed.
 */
#include <errno.h>
#include <string.h>

#include "fuzz.h"
#include "rpc/format.h"
#include "rpc/rpc.h"
#include "rpc/rpc_int.h"
#include "util/buf.h"
#include "util/coding.h"
#include "util/crc32c.h"
#include "util/error.h"

static void
fix_frames(uint8_t *p, size_t n)
{
	size_t pos = 0;
	uint32_t len;

	while (n - pos >= RPC_FRAME_HEADER_SIZE) {
		len = get_fixed32(p + pos);
		if (len < RPC_FRAME_MIN_LENGTH || len > n - pos - 4)
			break;
		put_fixed32(p + pos + 4,
		    crc32c_mask(crc32c_value(p + pos + 8, len - 4)));
		pos += 4 + (size_t)len;
	}
}

/* The frame at p[0..n) decodes as rc says, with the properties above. */
static int
check_one(const uint8_t *p, size_t n, size_t max_frame, size_t *consumed)
{
	struct rpc_frame f, g;
	struct buf out;
	size_t used = 0, again;
	int rc;

	rc = rpc_frame_decode(p, n, max_frame, &f, &used);
	if (rc == 1) {
		FUZZ_CHECK(used > n && used >= RPC_FRAME_HEADER_SIZE);
		FUZZ_CHECK(used - RPC_FRAME_HEADER_SIZE <= max_frame);
		return rc;
	}
	if (rc < 0) {
		FUZZ_CHECK(rc == BT_ECHECKSUM || rc == -EMSGSIZE ||
		    rc == -EPROTO);
		return rc;
	}
	FUZZ_CHECK(rc == 0);
	FUZZ_CHECK(used <= n && used == RPC_FRAME_HEADER_SIZE + f.payload.n);
	FUZZ_CHECK(f.payload.n <= max_frame);
	FUZZ_CHECK(f.payload.p == p + RPC_FRAME_HEADER_SIZE);
	buf_init(&out);
	FUZZ_CHECK(rpc_frame_encode(&out, &f) == 0);
	FUZZ_CHECK(out.n == used && memcmp(out.p, p, used) == 0);
	buf_release(&out);
	/* Every proper prefix wants more; from 4 bytes on, this frame's size. */
	for (size_t k = 0; k < used; k += 1 + k / 8) {
		again = 0;
		FUZZ_CHECK(rpc_frame_decode(p, k, max_frame, &g, &again) == 1);
		FUZZ_CHECK(k < 4 ? again == RPC_FRAME_HEADER_SIZE :
		    again == used);
	}
	*consumed = used;
	return 0;
}

static void
check_proof(const uint8_t *data, size_t size)
{
	static const uint8_t secret[RPC_SECRET_SIZE] = "a cell's secret, 32 bytes long.";
	uint8_t in[2 * RPC_NONCE_SIZE + RPC_PROOF_SIZE] = { 0 };
	uint8_t want[RPC_PROOF_SIZE];
	const uint8_t *key = size > 0 && (data[0] & 2) ? secret : NULL;
	const uint8_t *cn = in, *sn = in + RPC_NONCE_SIZE;
	uint8_t *proof = in + 2 * RPC_NONCE_SIZE;
	size_t i;

	memcpy(in, data, size < sizeof(in) ? size : sizeof(in));
	rpc_auth_proof(key, RPC_LABEL_CLIENT, cn, sn, want);
	FUZZ_CHECK(rpc_auth_check(key, RPC_LABEL_CLIENT, cn, sn, proof) ==
	    (memcmp(want, proof, RPC_PROOF_SIZE) == 0));
	FUZZ_CHECK(rpc_auth_check(key, RPC_LABEL_CLIENT, cn, sn, want));
	FUZZ_CHECK(!rpc_auth_check(key, RPC_LABEL_SERVER, cn, sn, want));
	i = size > 1 ? data[1] % RPC_PROOF_SIZE : 0;
	want[i] ^= 1 + (size > 2 ? data[2] % 255 : 0);
	FUZZ_CHECK(!rpc_auth_check(key, RPC_LABEL_CLIENT, cn, sn, want));
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const size_t max_frames[] = { 0, 1, 64, 4096, RPC_MAX_FRAME };
	size_t n, pos = 0, used, max_frame;
	uint8_t *copy;

	check_proof(data, size);
	if (size < 1)
		return 0;
	n = size - 1;
	max_frame = max_frames[(data[0] >> 1) % 5];
	FUZZ_CHECK((copy = malloc(n + 1)) != NULL);
	memcpy(copy, data + 1, n);
	if (data[0] & 1)
		fix_frames(copy, n);
	while (check_one(copy + pos, n - pos, max_frame, &used) == 0)
		pos += used;
	FUZZ_CHECK(pos <= n);
	free(copy);
	return 0;
}
