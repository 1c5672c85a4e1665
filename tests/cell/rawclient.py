#!/usr/bin/env python3
"""rawclient.py - bad input to a tablet server, over raw TCP (no client
library): the wire format of src/rpc/format.h written by hand.

    rawclient.py ADDRESS CELL TABLETCTL [IDLE [OTHER]]
        Sends, each on its own connection unless said: a wrong preamble;
        a frame with a bad crc; a frame length below the header's; a
        frame declaring a payload over 300 MiB; then on one connection an
        unknown method, READ_ROW / TABLE_DESCRIBE / MUTATE_ROW naming an
        unknown table, a payload that does not unpack, a SERVE naming
        another store, and TABLE_LIST, which must still answer; a SERVE
        naming no store to IDLE, a server that serves nothing, and one
        naming OTHER, a store that is not the cell's (EPERM); requests
        sent and the connection dropped before the replies; and, held
        open meanwhile, clients that stall (no preamble; half a frame; a
        declared 200 MiB frame), while `TABLETCTL -s CELL` must keep
        working.  The stall without a preamble must be closed by the
        server (its 10 s preamble timeout).  Prints one line per case;
        exits 1 on the first that fails.
"""
import os
import socket
import struct
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rpcwire import (HEADER, MAX_FRAME, MIN_LENGTH,  # noqa: E402
                     crc32c, frame, handshake, mask, recv_exact, secret)

ENOSYS, EPROTO, EBUSY, EPERM = -38, -71, -16, -1
TABLE_DESCRIBE, TABLE_LIST = 8, 3
MUTATE_ROW, READ_ROW, SERVE = 20, 23, 60


def pb_string(field, value):
    """A length-delimited protobuf field (string, bytes)."""
    if isinstance(value, str):
        value = value.encode()
    n = len(value)
    varint = b""
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            varint += bytes([byte | 0x80])
        else:
            varint += bytes([byte])
            break
    return bytes([field << 3 | 2]) + varint + value


# A Mutation: kind PUT, f:q = v.
PUT = b"\x08\x01" + pb_string(2, "f") + pb_string(3, "q") + pb_string(5, "v")


def fail(what):
    print("FAIL: " + what, flush=True)
    sys.exit(1)


def connect(address, greet=True):
    host, port = address.rsplit(":", 1)
    s = socket.create_connection((host, int(port)), timeout=10)
    if greet:
        try:
            handshake(s, secret())
        except ConnectionError as e:
            fail("handshake: %s" % e)
    return s




def read_reply(s):
    head = recv_exact(s, HEADER)
    if len(head) < HEADER:
        fail("connection closed instead of a reply")
    length, crc = struct.unpack("<II", head[:8])
    payload = recv_exact(s, length - MIN_LENGTH)
    if mask(crc32c(head[8:] + payload)) != crc:
        fail("a reply's crc does not match")
    rid, method, status, _ = struct.unpack("<QIiI", head[8:])
    return rid, method, status, payload


def closed_by_server(s, within):
    """True when the server closes s (EOF or reset) within seconds."""
    s.settimeout(within)
    try:
        while True:
            if not s.recv(65536):
                return True
    except (ConnectionResetError, BrokenPipeError):
        return True
    except socket.timeout:
        return False


def case(name, ok):
    if not ok:
        fail(name)
    print("ok: " + name, flush=True)


def main():
    address, cell, tabletctl = sys.argv[1:4]
    idle = sys.argv[4] if len(sys.argv) > 4 and sys.argv[4] else None
    other = sys.argv[5] if len(sys.argv) > 5 else None

    def ctl(*args):
        r = subprocess.run([tabletctl, "-s", cell] + list(args),
                           capture_output=True, timeout=60)
        if r.returncode != 0:
            fail("tabletctl %s: %s" % (" ".join(args),
                                       r.stderr.decode().strip()))
        return r.stdout.decode()

    # Stallers first, held open through the rest.
    t_stall = time.monotonic()
    mute = connect(address, greet=False)
    half = connect(address)
    half.sendall(frame(1, TABLE_LIST)[:HEADER - 5])
    big = connect(address)
    big.sendall(struct.pack("<II", MIN_LENGTH + (200 << 20), 0) +
                b"\0" * 4096)

    s = connect(address, greet=False)
    s.sendall(b"GET / HTTP/1.0\r\n\r\n")
    case("a wrong preamble: closed", closed_by_server(s, 5))
    s = connect(address)
    s.sendall(frame(1, TABLE_LIST, pb_string(1, "x"), bad_crc=True))
    case("a bad crc: closed", closed_by_server(s, 5))
    s = connect(address)
    s.sendall(struct.pack("<I", 3) + b"\0" * 40)
    case("a length below the header's: closed", closed_by_server(s, 5))
    s = connect(address)
    s.sendall(struct.pack("<II", MIN_LENGTH + MAX_FRAME + 1, 0))
    case("a frame over 300 MiB, declared only: closed",
         closed_by_server(s, 5))
    s = connect(address)
    s.sendall(b"\xff" * 64)
    case("garbage after the preamble: closed", closed_by_server(s, 5))

    s = connect(address)
    calls = [
        (999, b"", ENOSYS, "an unknown method"),
        (0, b"", ENOSYS, "method 0"),
        (READ_ROW, pb_string(1, "nosuch") + pb_string(2, "r"), None,
         "READ_ROW of an unknown table"),
        (TABLE_DESCRIBE, pb_string(1, "nosuch"), None,
         "TABLE_DESCRIBE of an unknown table"),
        (MUTATE_ROW, pb_string(1, "nosuch") + pb_string(2, "r") +
         pb_string(3, PUT), None,
         "MUTATE_ROW of an unknown table"),
        (MUTATE_ROW, b"\xff\xff\xff\xff", EPROTO,
         "MUTATE_ROW whose payload does not unpack"),
        (READ_ROW, b"\x0a\xff\xff\xff\xff\x0f", EPROTO,
         "READ_ROW with a string past the payload's end"),
        (SERVE, pb_string(1, "/nonexistent/store"), EPERM,
         "SERVE naming another store"),
    ]
    for i, (method, payload, want, name) in enumerate(calls):
        s.sendall(frame(100 + i, method, payload))
    replies = {}        # they may come in any order (format.h)
    for _ in calls:
        rid, m, status, text = read_reply(s)
        replies[rid] = (m, status, text)
    for i, (method, payload, want, name) in enumerate(calls):
        if 100 + i not in replies or replies[100 + i][0] != method:
            fail("%s: no reply to request %d" % (name, 100 + i))
        m, status, text = replies[100 + i]
        print("   %s: status %d: %s" % (name, status,
                                         text.decode(errors="replace")))
        case(name + ": an error status", status < 0 and
             (want is None or status == want) and len(text) > 0)
    s.sendall(frame(200, TABLE_LIST))
    rid, m, status, text = read_reply(s)
    case("TABLE_LIST after them on the same connection",
         rid == 200 and status == 0 and b"t" in text)
    s.close()

    # A server other than the root's is not made to serve what is no
    # store, and answers afterwards as it did before.
    if idle is not None:
        s = connect(idle)
        s.sendall(frame(499, TABLE_LIST))
        rid, m, before, before_text = read_reply(s)
        s.sendall(frame(500, SERVE, pb_string(1, "/nonexistent/store")))
        rid, m, status, text = read_reply(s)
        print("   SERVE of no store to %s: status %d: %s" %
              (idle, status, text.decode(errors="replace")))
        case("SERVE naming no store, to an idle server: an error status",
             rid == 500 and status < 0)
        if other is not None:
            s.sendall(frame(502, SERVE, pb_string(1, other)))
            rid, m, status, text = read_reply(s)
            print("   SERVE of the store %s to %s: status %d: %s" %
                  (other, idle, status, text.decode(errors="replace")))
            case("SERVE naming a store that is not the cell's: EPERM",
                 rid == 502 and status == EPERM)
        s.sendall(frame(501, TABLE_LIST))
        rid, m, status, text = read_reply(s)
        case("the other server answers as before the bad SERVEs",
             rid == 501 and status == before and text == before_text)
        s.close()

    # Requests dropped: the connection goes before their replies.
    for _ in range(5):
        s = connect(address)
        s.sendall(b"".join(frame(300 + i, TABLE_LIST) for i in range(50)))
        s.close()
    s = connect(address)
    s.sendall(frame(400, TABLE_LIST) + frame(401, TABLE_LIST)[:10])
    s.close()
    case("requests dropped before their replies", True)

    # Everyone else is served meanwhile, and nothing is lost.
    ctl("set", "t", "raw-probe", "f:q=still")
    case("tabletctl set and get while clients stall",
         "still" in ctl("lookup", "t", "raw-probe"))

    waited = time.monotonic() - t_stall
    case("the client without a preamble is closed by the server",
         closed_by_server(mute, max(1.0, 13 - waited)))
    print("   closed after %.1f s" % (time.monotonic() - t_stall))
    half.close()
    big.close()
    ctl("set", "t", "raw-probe2", "f:q=after")
    case("tabletctl after the stallers left",
         "after" in ctl("lookup", "t", "raw-probe2"))


if __name__ == "__main__":
    main()
