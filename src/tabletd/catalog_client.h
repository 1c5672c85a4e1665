/*
 * catalog_client.h - a tablet server's remote catalog (catalog.h,
 * catalog_open_remote()): the catalog calls a tablet server makes, sent
 * as the CATALOG_* methods of tabletfs.proto to the root's server, which
 * opened the catalog and answers them on it (service_catalog.c;
 * docs/design.md section 5, "The catalog served").
 *
 * The handle is a struct catalog like a local one: the same calls, the
 * same return codes, results freed with the same functions, and
 * -EOPNOTSUPP for every call that a remote catalog does not serve.  What
 * the network adds:
 *
 *  - Each call has a deadline (deadline_ms from its start) and never
 *    waits past it: -ETIMEDOUT, with a detail naming the server and the
 *    call, when the connection or the reply does not come in time.
 *  - A connection that fails is -EIO with a detail naming the server and
 *    why; for a change (next_number, tablet_apply, tablet_replace) sent
 *    before it failed the detail says that its outcome is unknown.  An
 *    idempotent call, or a change that certainly was not sent, is tried
 *    once more on a new connection when it failed on one made by an
 *    earlier call (the root's server may have closed it meanwhile);
 *    nothing else is retried: finding the root's server again is the
 *    caller's business.
 *  - A server that does not prove the secret: -EACCES.
 *  - The root's server's own errors come back as its status, unchanged
 *    (BT_ENOTSERVING for a tablet_apply or tablet_replace on a tablet
 *    assigned to another server than caller, -ENOENT, -EEXIST, ...),
 *    with its message as the detail; a lookup's "not found" is
 *    BT_NOTFOUND, as locally.  A reply that does not decode or breaks a
 *    limit of catalog.h's structs is -EPROTO.
 *
 * Thread-safe: calls from many threads share one pipelined connection.
 */
#ifndef TABLETFS_TABLETD_CATALOG_CLIENT_H
#define TABLETFS_TABLETD_CATALOG_CLIENT_H

#include <stdint.h>

#include "catalog/catalog.h"

#define CATALOG_CLIENT_DEADLINE_MS	10000u

struct catalog_client_options {
	const char *address;	/* the root's server, "HOST:PORT" */
	const uint8_t *secret;	/* the cell's, RPC_SECRET_SIZE bytes
				   (copied); NULL: none, as rpc.h's */
	/* This server's name as the master assigns tablets to it
	 * ("HOST:PORT#EPOCH", 1 to CATALOG_SERVER_MAX bytes): sent with
	 * every call, and what tablet_apply and tablet_replace are
	 * fenced by. */
	const char *caller;
	uint32_t deadline_ms;	/* per call; 0: CATALOG_CLIENT_DEADLINE_MS */
};

/*
 * A remote catalog on the root's server at o->address, as o->caller
 * (both copied).  Connects at the first call, so that this cannot fail
 * for the network.  0 and *out (catalog_close() it), -EINVAL (no address,
 * or no caller or one too long), or -ENOMEM.
 */
int catalog_client_open(const struct catalog_client_options *o,
    struct catalog **out);

/*
 * Send c's later calls to the root's server at address ("HOST:PORT",
 * copied), when the root moves (SERVE naming a new root).  Calls in
 * flight finish on the connection they use (or fail as on a lost one:
 * -EIO, the outcome of a change unknown); a call that starts after this
 * returns connects to address; the address it uses already changes
 * nothing.  Thread-safe with calls on c.  0, or
 * -EINVAL (c not a catalog client's handle, no address or one too
 * long).
 */
int catalog_client_retarget(struct catalog *c, const char *address);

#endif
