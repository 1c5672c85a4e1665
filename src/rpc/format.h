/*
 * rpc/format.h - the cell's wire format between an RPC client and server
 * (also in tabletfs(5), RPC): opaque payloads tagged with a method
 * number, over one TCP connection.
 *
 * A connection begins with a handshake in which each side proves that it
 * knows the cell's secret (RPC_SECRET_SIZE bytes in the cell's storage,
 * made by tabletctl init), without sending it:
 *
 *   hello      client -> server  RPC_HELLO_SIZE bytes: the preamble, the
 *                                magic "TFSRPC" followed by the bytes
 *                                0x00 and the version (2), then the
 *                                client's nonce (RPC_NONCE_SIZE random
 *                                bytes)
 *   challenge  server -> client  RPC_CHALLENGE_SIZE bytes: the same
 *                                preamble, the server's nonce, and the
 *                                server's proof
 *   proof      client -> server  RPC_PROOF_SIZE bytes: the client's proof
 *   welcome    server -> client  RPC_WELCOME_SIZE bytes: "TFSRPCOK"
 *
 * A proof is HMAC-SHA256 keyed with the secret of the label
 * (RPC_LABEL_SERVER or RPC_LABEL_CLIENT, without a NUL), the client's
 * nonce and the server's nonce, in that order; without a secret (the
 * transport's own tests) the key is empty.  Proofs are compared in
 * constant time.  A server closes the connection without a word on a
 * hello whose preamble is not its own (another version, or not RPC),
 * and without its welcome on a wrong proof: it reads no frame of a
 * connection before its welcome.  A client that finds the server's
 * proof wrong closes the connection: the server does not know the
 * cell's secret.
 *
 * The secret authenticates; it does not encrypt.  Frames travel in the
 * clear, so someone who can read the link reads the data (as with NFS's
 * AUTH_SYS or ZooKeeper's digest authentication), though not the secret,
 * and someone who can change the link's packets can take a connection
 * over after its handshake.  TLS is future work.
 *
 * Then frames go both ways, every integer little-endian:
 *
 *   frame (RPC_FRAME_HEADER_SIZE bytes, then the payload):
 *     length     fixed32  bytes after this field: RPC_FRAME_MIN_LENGTH
 *                         plus the payload's, the payload at most the
 *                         reader's max_frame (RPC_MAX_FRAME by default)
 *     crc        fixed32  masked crc32c (util/crc32c.h) of every byte
 *                         after this field: id .. the payload's end
 *     id         fixed64  the request's id, chosen by the client; a reply
 *                         carries its request's
 *     method     fixed32  what to call; a reply echoes it
 *     status     int32    0 in a request; in a reply 0, or the negative
 *                         error code the handler returned (the payload
 *                         then is a UTF-8 message)
 *     timeout_ms fixed32  in a request, the milliseconds left until the
 *                         caller's deadline when it was sent (0: none);
 *                         0 in a reply
 *     payload    length - RPC_FRAME_MIN_LENGTH bytes, opaque
 *
 * A request whose timeout ran out before a worker took it is not run: its
 * reply has the status -ETIMEDOUT.  Replies may come in any order.  A
 * frame that fails its check (a length out of bounds, a bad crc) is not
 * answered: the reader closes the connection.
 */
#ifndef TABLETFS_RPC_FORMAT_H
#define TABLETFS_RPC_FORMAT_H

#define RPC_PREAMBLE		"TFSRPC\0\2"	/* magic, 0, version 2 */
#define RPC_PREAMBLE_SIZE	8
#define RPC_SECRET_SIZE		32
#define RPC_NONCE_SIZE		32
#define RPC_PROOF_SIZE		32	/* HMAC-SHA256 */
#define RPC_HELLO_SIZE		(RPC_PREAMBLE_SIZE + RPC_NONCE_SIZE)
#define RPC_CHALLENGE_SIZE	(RPC_PREAMBLE_SIZE + RPC_NONCE_SIZE + \
				 RPC_PROOF_SIZE)
#define RPC_WELCOME		"TFSRPCOK"
#define RPC_WELCOME_SIZE	8
#define RPC_LABEL_SERVER	"tabletfs rpc server"
#define RPC_LABEL_CLIENT	"tabletfs rpc client"
#define RPC_FRAME_HEADER_SIZE	28	/* length .. timeout_ms */
#define RPC_FRAME_MIN_LENGTH	24	/* crc .. timeout_ms */

#endif
