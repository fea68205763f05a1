"""Constants and lookup tables of the snapshot and transaction-log kernels
(:mod:`pipelines.zookeeper.kernels`), importable without numba."""

from __future__ import annotations

import numpy as np

from pipelines.zookeeper.jute import LOG_FRAME, TXN_DIGEST, TXN_HEADER

STAT_SIZE = 60
MIN_NODE = 4 + 4 + 8 + STAT_SIZE
MAX_REASONABLE = 64 << 20
SMALL_SORT = 32  # groups up to this size are insertion sorted (a radix pass costs 256 counters)

OK, TRUNCATED, UNREASONABLE, NULL_PATH = 0, 1, 2, 3
STATUS_REASON = {
    TRUNCATED: "truncated inside a node record",
    UNREASONABLE: "unreasonable length",
    NULL_PATH: "null path in a node record",
}

CONTAINER_OWNER = -(1 << 63)  # ephemeralOwner of a container node (EphemeralType)

ZK_PREFIX = np.frombuffer(b"/zookeeper/", dtype=np.uint8).copy()


def _crc_table() -> np.ndarray:
    table = np.zeros(256, dtype=np.uint32)
    for i in range(256):
        c = i
        for _ in range(8):
            c = (0xEDB88320 ^ (c >> 1)) if (c & 1) else (c >> 1)
        table[i] = c
    return table


def _crc_tables8(t0: np.ndarray) -> np.ndarray:
    """Slicing-by-8 tables: row k advances a byte through k more zero bytes."""
    tables = np.zeros((8, 256), dtype=np.uint32)
    tables[0] = t0
    for k in range(1, 8):
        prev = tables[k - 1]
        tables[k] = (prev >> 8) ^ t0[prev & 0xFF]
    return tables


CRC_TABLE = _crc_table()
CRC_TABLES8 = _crc_tables8(CRC_TABLE)

# Transaction logs (walk_log; the grammar is in pipelines.zookeeper.txnlog)
LOG_FRAME_SIZE = LOG_FRAME.size  # long crc, int length
TXN_HEADER_SIZE = TXN_HEADER.size
TXN_DIGEST_SIZE = TXN_DIGEST.size
ZXID_AT = 12  # of the zxid in a TxnHeader {long clientId, int cxid, long zxid, long time, int type}
TYPE_AT = TXN_HEADER_SIZE - 4  # of the type
END_OF_RECORD = 0x42  # 'B'
# field kinds of a txn body table (txnlog.body_table encodes txnlog.BODIES with them): a row per
# txn type, its fields' kinds in order, then F_END; F_UNKNOWN first for a type not in BODIES
F_UNKNOWN, F_END, F_INT, F_LONG, F_BOOL, F_BUFFER, F_ACLS, F_PATHS, F_MULTI = range(-1, 8)
F_OPTIONAL = 16  # added to a kind: the field may be absent at the end of the body
KIND_MASK = F_OPTIONAL - 1
