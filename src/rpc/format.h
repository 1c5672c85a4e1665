/*
 * rpc/format.h - the cell's wire format between an RPC client and server
 * (also in tabletfs(5), RPC): opaque payloads tagged with a method
 * number, over one TCP connection.
 *
 * On connect the client sends an 8-byte preamble, the magic "TFSRPC"
 * followed by the bytes 0x00 and the version (1); the server answers with
 * the same 8 bytes, or closes the connection when it does not know them.
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

#define RPC_PREAMBLE		"TFSRPC\0\1"	/* magic, 0, version 1 */
#define RPC_PREAMBLE_SIZE	8
#define RPC_FRAME_HEADER_SIZE	28	/* length .. timeout_ms */
#define RPC_FRAME_MIN_LENGTH	24	/* crc .. timeout_ms */

#endif
