"""rpcwire.py - the handshake and frames of src/rpc/format.h, written by
hand for the tests that talk to tablet servers over raw TCP
(tests/cell/rawclient.py, tests/cluster/prober.py): no client library in
the way.  The cell's secret is read from the file RPC_SECRET_FILE names
(STORAGE/secret), as every process of a cell reads it.
"""
import hashlib
import hmac
import os
import struct

PREAMBLE = b"TFSRPC\x00\x02"
PREAMBLE_V1 = b"TFSRPC\x00\x01"
NONCE = 32
PROOF = 32
WELCOME = b"TFSRPCOK"
LABEL_SERVER = b"tabletfs rpc server"
LABEL_CLIENT = b"tabletfs rpc client"
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


def secret():
    """The cell's secret, from the file RPC_SECRET_FILE names."""
    with open(os.environ["RPC_SECRET_FILE"], "rb") as f:
        return f.read()


def proof(key, label, client_nonce, server_nonce):
    return hmac.new(key, label + client_nonce + server_nonce,
                    hashlib.sha256).digest()


def handshake(s, key):
    """The client's side of the handshake on socket s with secret key:
    raises ConnectionError unless the server proves key and welcomes."""
    client_nonce = os.urandom(NONCE)
    s.sendall(PREAMBLE + client_nonce)
    got = recv_exact(s, len(PREAMBLE) + NONCE + PROOF)
    if len(got) < len(PREAMBLE) + NONCE + PROOF or \
            got[:len(PREAMBLE)] != PREAMBLE:
        raise ConnectionError("challenge %r" % got[:len(PREAMBLE)])
    server_nonce = got[len(PREAMBLE):len(PREAMBLE) + NONCE]
    want = proof(key, LABEL_SERVER, client_nonce, server_nonce)
    if not hmac.compare_digest(want, got[len(PREAMBLE) + NONCE:]):
        raise ConnectionError("the server does not prove the secret")
    s.sendall(proof(key, LABEL_CLIENT, client_nonce, server_nonce))
    if recv_exact(s, len(WELCOME)) != WELCOME:
        raise ConnectionError("no welcome")
