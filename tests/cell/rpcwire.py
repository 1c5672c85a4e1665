"""rpcwire.py - the frames of src/rpc/format.h, written by hand for the
tests that talk to tablet servers over raw TCP (tests/cell/rawclient.py,
tests/cluster/prober.py): no client library in the way.
"""
import struct

PREAMBLE = b"TFSRPC\x00\x01"
HEADER = 28             # length, crc, then what the crc covers
MIN_LENGTH = 24         # id, method, status, timeout: the length's floor
MAX_FRAME = 300 << 20


def _table():
    t = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        t.append(c)
    return t


CRC_TABLE = _table()


def crc32c(data):
    c = 0xFFFFFFFF
    for b in data:
        c = CRC_TABLE[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def mask(crc):
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def frame(rid, method, payload=b"", timeout_ms=10000, bad_crc=False):
    """A request frame; bad_crc spoils its checksum."""
    rest = struct.pack("<QIiI", rid, method, 0, timeout_ms) + payload
    crc = mask(crc32c(rest))
    if bad_crc:
        crc ^= 1
    return struct.pack("<II", MIN_LENGTH + len(payload), crc) + rest


def recv_exact(s, n):
    """n bytes from socket s, or fewer if the peer closed first."""
    data = b""
    while len(data) < n:
        chunk = s.recv(n - len(data))
        if not chunk:
            return data
        data += chunk
    return data
