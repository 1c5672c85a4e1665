/*
 * rpc_auth.c - the handshake's cryptography (rpc/format.h): nonces from
 * getrandom(2), proofs as HMAC-SHA256 and their constant-time check,
 * from Nettle rather than written here.
 */
#include <errno.h>
#include <nettle/hmac.h>
#include <nettle/memops.h>
#include <string.h>
#include <sys/random.h>

#include "rpc/rpc_int.h"
#include "util/error.h"

int
rpc_auth_random(uint8_t *p, size_t n)
{
	ssize_t r;

	while (n > 0) {
		r = getrandom(p, n, 0);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return bt_error_set(-errno, "getrandom: %s",
			    strerror(errno));
		}
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

void
rpc_auth_proof(const uint8_t *secret, const char *label,
    const uint8_t client_nonce[RPC_NONCE_SIZE],
    const uint8_t server_nonce[RPC_NONCE_SIZE],
    uint8_t proof[RPC_PROOF_SIZE])
{
	struct hmac_sha256_ctx ctx;

	hmac_sha256_set_key(&ctx, secret != NULL ? RPC_SECRET_SIZE : 0,
	    secret != NULL ? secret : (const uint8_t *)"");
	hmac_sha256_update(&ctx, strlen(label), (const uint8_t *)label);
	hmac_sha256_update(&ctx, RPC_NONCE_SIZE, client_nonce);
	hmac_sha256_update(&ctx, RPC_NONCE_SIZE, server_nonce);
	hmac_sha256_digest(&ctx, RPC_PROOF_SIZE, proof);
}

bool
rpc_auth_check(const uint8_t *secret, const char *label,
    const uint8_t client_nonce[RPC_NONCE_SIZE],
    const uint8_t server_nonce[RPC_NONCE_SIZE],
    const uint8_t proof[RPC_PROOF_SIZE])
{
	uint8_t want[RPC_PROOF_SIZE];

	rpc_auth_proof(secret, label, client_nonce, server_nonce, want);
	return memeql_sec(want, proof, RPC_PROOF_SIZE) != 0;
}
