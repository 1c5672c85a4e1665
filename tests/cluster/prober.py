#!/usr/bin/env python3
"""prober.py - which tablet server acknowledged what, and when, seen from
a client: the other side of the timestamps in tests/cluster.

    prober.py run OUT STOPFILE PID TABLE ADDRESS...
        One thread per server ADDRESS (HOST:PORT), each sending writes
        straight to it over raw TCP (src/rpc/format.h; no client library,
        no ZooKeeper, so a server cut off from ZooKeeper is still asked;
        the cell's secret read from the file RPC_SECRET_FILE names),
        one at a time, about every 5 ms, until STOPFILE exists or process
        PID (the test's shell) is gone: MUTATE_ROW
        of row p<i>-<n>, f:q = v<i>-<n>, stamped by the server's clock
        (the rows begin with PROBER_PREFIX instead of "p" when that is
        set: a prefix within one tablet asks every server for it).
        Appends one line per write to OUT:
            address  sent_ms  answered_ms  status  stamp_us  row  value
        status 0 is an acknowledgement, a negative one the server's error
        (-10005: it serves nothing), "conn" no answer (refused, closed,
        timed out).  Every time is CLOCK_REALTIME, which every namespace
        of the machine shares.
    prober.py acked OUT
        The acknowledged writes of OUT, "row<TAB>value" per line.
    prober.py overlap OUT OLD [FROM_MS]
        The figures of a handover from the server OLD (an ADDRESS) to
        whichever server acknowledged next: OLD's last acknowledgement,
        the next server's first, the gap between them on the client's
        clock (the first one's send time minus OLD's last answer time)
        and on the servers' (stamps), over the writes sent from FROM_MS
        on.  Exit 1 when they overlap.
"""
import os
import socket
import struct
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "cell"))
import rpcwire  # noqa: E402
from rpcwire import (HEADER, MIN_LENGTH, crc32c, frame,  # noqa: E402
                     handshake, mask, secret)

MUTATE_ROW = 20
PERIOD = 0.005
ANSWER_TIMEOUT = 1.0


def varint(n):
    n &= (1 << 64) - 1
    out = b""
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out += bytes([byte | 0x80])
        else:
            return out + bytes([byte])


def field_bytes(field, value):
    if isinstance(value, str):
        value = value.encode()
    return varint(field << 3 | 2) + varint(len(value)) + value


def field_varint(field, value):
    return varint(field << 3) + varint(value)


def read_varint(b, i):
    shift = n = 0
    while True:
        c = b[i]
        i += 1
        n |= (c & 0x7F) << shift
        shift += 7
        if not c & 0x80:
            return n, i


def reply_stamp(payload):
    """MutateRowReply.stamp (field 1), 0 when absent."""
    i = 0
    while i < len(payload):
        key, i = read_varint(payload, i)
        if key & 7 == 0:
            v, i = read_varint(payload, i)
            if key >> 3 == 1:
                return v
        elif key & 7 == 2:
            n, i = read_varint(payload, i)
            i += n
        else:
            break
    return 0


def recv_exact(s, n):
    data = rpcwire.recv_exact(s, n)
    if len(data) < n:
        raise ConnectionError("closed")
    return data


def mutate(table, row, value):
    # Mutation: kind PUT, f:q = value, ts -1 (the server's clock).
    m = (field_varint(1, 1) + field_bytes(2, "f") + field_bytes(3, "q") +
         field_varint(4, -1) + field_bytes(5, value))
    return field_bytes(1, table) + field_bytes(2, row) + field_bytes(3, m)


def now_ms():
    return time.time() * 1000.0


def running(stopfile, owner):
    if os.path.exists(stopfile):
        return False
    try:
        os.kill(owner, 0)
    except ProcessLookupError:
        return False
    return True


def probe(index, address, table, stopfile, owner, out, lock):
    key = secret()
    host, port = address.rsplit(":", 1)
    prefix = os.environ.get("PROBER_PREFIX", "p")
    s = None
    n = 0
    while running(stopfile, owner):
        n += 1
        row = "%s%d-%d" % (prefix, index, n)
        value = "v%d-%d" % (index, n)
        sent = now_ms()
        status, stamp = "conn", 0
        try:
            if s is None:
                s = socket.create_connection((host, int(port)),
                                             timeout=ANSWER_TIMEOUT)
                handshake(s, key)
                sent = now_ms()
            s.sendall(frame(n, MUTATE_ROW, mutate(table, row, value),
                                timeout_ms=1000))
            head = recv_exact(s, HEADER)
            length, crc = struct.unpack("<II", head[:8])
            payload = recv_exact(s, length - MIN_LENGTH)
            if mask(crc32c(head[8:] + payload)) != crc:
                raise ConnectionError("crc")
            rid, _, st, _ = struct.unpack("<QIiI", head[8:])
            if rid != n:
                raise ConnectionError("reply to %d, not %d" % (rid, n))
            status = st
            if st == 0:
                stamp = reply_stamp(payload)
        except (OSError, ConnectionError):
            if s is not None:
                s.close()
            s = None
        answered = now_ms()
        with lock:
            out.write("%s\t%.3f\t%.3f\t%s\t%d\t%s\t%s\n" % (
                address, sent, answered, status, stamp, row, value))
            out.flush()
        rest = PERIOD - (answered - sent) / 1000.0
        time.sleep(rest if rest > 0 else 0.001)


def run(args):
    path, stopfile, owner, table = args[:4]
    lock = threading.Lock()
    with open(path, "a") as out:
        threads = [threading.Thread(target=probe, args=(
            i + 1, a, table, stopfile, int(owner), out, lock), daemon=True)
            for i, a in enumerate(args[4:])]
        for t in threads:
            t.start()
        for t in threads:
            t.join()


def records(path):
    with open(path) as f:
        for line in f:
            p = line.rstrip("\n").split("\t")
            if len(p) == 7:
                yield (p[0], float(p[1]), float(p[2]), p[3], int(p[4]),
                       p[5], p[6])


def acked(args):
    for r in records(args[0]):
        if r[3] == "0":
            print("%s\t%s" % (r[5], r[6]))


def overlap(args):
    path, old = args[:2]
    start = float(args[2]) if len(args) > 2 else 0.0
    acks = sorted((r for r in records(path) if r[3] == "0" and
                   r[1] >= start),
                  key=lambda r: r[1])
    olds = [r for r in acks if r[0] == old]
    if not olds:
        print("overlap: %s acknowledged nothing" % old)
        return 1
    last = max(olds, key=lambda r: r[2])
    others = [r for r in acks if r[0] != old and r[1] > olds[0][1]]
    if not others:
        print("overlap: no other server acknowledged after %s" % old)
        return 1
    first = min(others, key=lambda r: r[1])
    # Every acknowledgement of another server after OLD's first, against
    # OLD's last: none may have been sent before OLD last answered.
    early = [r for r in others if r[1] <= last[2]]
    gap = first[1] - last[2]
    stamp_gap = (first[4] - last[4]) / 1000.0
    print("old %s: %d acknowledged, last sent %.0f answered %.0f stamp %d"
          % (old, len(olds), last[1], last[2], last[4]))
    print("new %s: first sent %.0f answered %.0f stamp %d"
          % (first[0], first[1], first[2], first[4]))
    print("gap: %.1f ms on the client's clock, %.1f ms between the "
          "servers' stamps; %d acknowledgements of another server sent "
          "before the old one's last answer" % (gap, stamp_gap, len(early)))
    print("figures: last_old_ack_ms=%.0f first_new_sent_ms=%.0f "
          "gap_ms=%.1f stamp_gap_ms=%.1f" % (last[2], first[1], gap,
                                              stamp_gap))
    return 1 if early or stamp_gap <= 0 else 0


def main():
    verb, args = sys.argv[1], sys.argv[2:]
    if verb == "run":
        run(args)
    elif verb == "acked":
        acked(args)
    elif verb == "overlap":
        sys.exit(overlap(args))
    else:
        sys.exit("usage: prober.py run|acked|overlap ...")


if __name__ == "__main__":
    main()
